package topics

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/offsets"
)

// refreshLog reads the changelog log an LSM table names and stores it on
// the topic before the caller publishes tbl, so that a fetch that sees the
// new metadata also finds the snapshots that left it.
func (w *watcher) refreshLog(ctx context.Context, tbl *table.Table) error {
	if !changelog.IsLSMTable(tbl.Properties()) {
		return nil
	}
	log, err := w.loadLog(ctx, tbl)
	if err != nil {
		return err
	}
	if old := w.topic.retained.Swap(log); old != log {
		w.topic.prevRetained.Store(old)
	}
	return nil
}

// history returns the topic's snapshots, oldest first: the main branch,
// preceded for a lakegw LSM table by the checkpoint and the expired
// snapshots its changelog log keeps (changelog.LSMHistory), for any other
// by the snapshots its pinned log keeps (pinnedHistory).
func (w *watcher) history(tbl *table.Table) ([]changelog.SnapshotRef, error) {
	if !changelog.IsLSMTable(tbl.Properties()) {
		return w.pinnedHistory(tbl)
	}
	return changelog.LSMHistory(tbl.Metadata(), w.topic.retained.Load())
}

// loadLog reads the changelog log the table names, once per file (a log
// file is never rewritten in place: maintenance writes a new one), taking
// the segments the previous log already loaded from it.
func (w *watcher) loadLog(ctx context.Context, tbl *table.Table) (*changelog.LSMLog, error) {
	path := tbl.Properties()[changelog.PropLSMChangelogLog]
	if path == "" {
		return nil, nil
	}
	if path == w.lsmLogPath {
		return w.lsmLog, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	log, err := changelog.ReadLSMLog(fs, path, w.lsmLog)
	if err != nil {
		return nil, err
	}
	w.lsmLogPath, w.lsmLog = path, log
	return log, nil
}

// snapshotOf finds a snapshot of the topic's history in the table metadata
// or, once expired, in the changelog log.
func snapshotOf(tbl *table.Table, log *changelog.LSMLog, ref changelog.SnapshotRef) *table.Snapshot {
	if s := tbl.Metadata().SnapshotByID(ref.SnapshotID); s != nil {
		return s
	}
	return log.Snapshot(ref.SnapshotID, ref.SequenceNumber)
}

// startAt moves an empty index to where the table says the offsets of
// ref, its first snapshot, begin: a lakegw LSM table's summaries record
// each bucket's end offset, so a rebuilt index (state store lost, another
// gateway) numbers every record as every other gateway does. counts are
// the records ref occupies (its live rows for a compacted prefix). Other
// tables start at 0.
func (w *watcher) startAt(ctx context.Context, tbl *table.Table, ref changelog.SnapshotRef, counts []int64) error {
	t := w.topic
	if t.Index.Len() != 0 || t.Index.HighWatermark(0) != 0 {
		return nil
	}
	ends, ok, err := w.tableEnds(tbl, ref)
	if err != nil || !ok {
		return err
	}
	bases := make([]int64, len(ends))
	for p := range ends {
		if bases[p] = ends[p] - counts[p]; bases[p] < 0 {
			return fmt.Errorf("snapshot %d records end offset %d in partition %d, before its %d records", ref.SnapshotID, ends[p], p, counts[p])
		}
	}
	if err := t.Index.StartAt(ctx, bases); err != nil {
		return err
	}
	w.log.Info().Int64("snapshot_id", ref.SnapshotID).Ints64("start_offsets", bases).
		Msg("offsets start where the table's summaries say its retained history begins")
	return nil
}

// tableEnds returns the end offsets a lakegw LSM table or raw topic's table
// records for ref; ok is false for any other table, or one whose ends are
// unknown.
func (w *watcher) tableEnds(tbl *table.Table, ref changelog.SnapshotRef) ([]int64, bool, error) {
	props := tbl.Properties()
	if !changelog.IsLSMTable(props) && !changelog.IsRawTable(props) {
		return nil, false, nil
	}
	s := tbl.Metadata().SnapshotByID(ref.SnapshotID)
	if s == nil {
		return nil, false, nil
	}
	if changelog.IsRawTable(props) {
		// Always known: the data say it when the summaries do not.
		ends, err := changelog.RawEnds(w.ctx, tbl, s, int(w.topic.Index.Partitions()))
		return ends, err == nil, err
	}
	return changelog.LSMEnds(tbl.Metadata(), s, int(w.topic.Index.Partitions()))
}

// prefixEpoch is the leader epoch of a compacted prefix of ref in a table
// that determines its offsets: the same on every gateway (offsets.PrefixEpoch).
func prefixEpoch(ref changelog.SnapshotRef) int32 {
	return offsets.PrefixEpoch(ref.SequenceNumber)
}
