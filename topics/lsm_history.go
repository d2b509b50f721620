package topics

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// history returns the topic's snapshots, oldest first: the main branch,
// preceded for a lakegw LSM table by the checkpoint and the expired
// snapshots its changelog log keeps (changelog.LSMHistory). The log is
// stored on the topic before the caller publishes tbl, so that a fetch
// that sees the new metadata also finds the snapshots that left it.
func (w *watcher) history(ctx context.Context, tbl *table.Table) ([]changelog.SnapshotRef, error) {
	if !changelog.IsLSMTable(tbl.Properties()) {
		return changelog.MainHistory(tbl.Metadata())
	}
	log, err := w.loadLog(ctx, tbl)
	if err != nil {
		return nil, err
	}
	w.topic.retained.Store(log)
	return changelog.LSMHistory(tbl.Metadata(), log)
}

// loadLog reads the changelog log the table names, once per file (a log
// file is never rewritten in place: maintenance writes a new one).
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
	log, err := changelog.ReadLSMLog(fs, path)
	if err != nil {
		return nil, err
	}
	w.lsmLogPath, w.lsmLog = path, log
	return log, nil
}

// snapshotOf finds a snapshot of the topic's history in the table metadata
// or, once expired, in the changelog log.
func snapshotOf(tbl *table.Table, log *changelog.LSMLog, id int64) *table.Snapshot {
	if s := tbl.Metadata().SnapshotByID(id); s != nil {
		return s
	}
	return log.Snapshot(id)
}

// startAt moves an empty index to where the table says the offsets of
// ref, its first snapshot, begin: a lakegw LSM table's summaries record
// each bucket's end offset, so a rebuilt index (state store lost, another
// gateway) numbers every record as every other gateway does. counts are
// the records ref occupies (its live rows for a compacted prefix). Other
// tables start at 0.
func (w *watcher) startAt(ctx context.Context, tbl *table.Table, ref changelog.SnapshotRef, counts []int64) error {
	t := w.topic
	if t.Index.HighWatermark(0) != 0 || len(t.Index.Snapshots()) != 0 || !changelog.IsLSMTable(tbl.Properties()) {
		return nil
	}
	s := tbl.Metadata().SnapshotByID(ref.SnapshotID)
	if s == nil {
		return nil
	}
	ends, ok, err := changelog.LSMEnds(tbl.Metadata(), s, int(t.Index.Partitions()))
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
