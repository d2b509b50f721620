package topics

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
)

// DefaultIndexDeriveMaxRecords is the largest append a watcher derives to
// index it (Config.IndexDeriveMaxRecords).
const DefaultIndexDeriveMaxRecords = 100_000

// DefaultStreamChunkRecords is the records per chunk of a streamed append
// (Config.StreamChunkRecords): tens of MB decoded, and a few hundred
// batches' encoding between two chunk reads.
const DefaultStreamChunkRecords = 64 << 10

// indexCounts counts the records of a new snapshot per partition, as
// cheaply as the table allows, and says how (for the log): a lakegw LSM
// table's summary records them; a large append is counted from its
// manifests; anything else is derived, and the derived changes are
// returned for the consumers at the tail, who read them next.
//
// A large append is not derived: a table's bootstrap snapshot (ten million
// rows are about 1.9 GiB decoded) would be held whole only to be counted,
// then derived again by the first fetch.
func (w *watcher) indexCounts(ctx context.Context, tbl *table.Table, ref changelog.SnapshotRef, enc *Encoding) (
	counts []int64, c *changelog.Changes, from string, err error) {
	t := w.topic
	s := snapshotOf(tbl, t.retained.Load(), ref)
	counts, ok, err := changelog.CountsFromSummary(tbl.Properties(), s, t.Config.Partitions)
	if err != nil || ok {
		return counts, nil, "summary", err
	}
	if t.raw != nil {
		// Only lakegw writes a raw topic's table, and every snapshot it
		// commits counts its records.
		return nil, nil, "", fmt.Errorf("snapshot %d of raw topic table %s records no counts of its records: another writer committed it; only Kafka producers through lakegw may write a raw topic",
			ref.SnapshotID, t.Name)
	}
	if w.largeAppend(s) {
		// The summary only decides whether to look: the count comes from
		// the manifests, which a summary may disagree with.
		n, ok, err := derive.AppendCount(ctx, w.readable(tbl, ref.SnapshotID), ref, t.deriveOptions(enc))
		if err != nil {
			return nil, nil, "", fmt.Errorf("snapshot %d (sequence number %d): %w", ref.SnapshotID, ref.SequenceNumber, err)
		}
		if ok {
			return []int64{n}, nil, "manifests", nil
		}
	}
	if c, err = derive.Derive(ctx, w.readable(tbl, ref.SnapshotID), ref, t.deriveOptions(enc)); err != nil {
		return nil, nil, "", fmt.Errorf("snapshot %d (sequence number %d): %w", ref.SnapshotID, ref.SequenceNumber, err)
	}
	return c.CountByPartition(), c, "derivation", nil
}

// largeAppend reports whether the summary of s says it adds more records
// than the configured most a watcher derives to index a snapshot.
func (w *watcher) largeAppend(s *table.Snapshot) bool {
	added, ok := summaryCount(s, "added-records")
	return ok && added > w.r.cfg.IndexDeriveMaxRecords
}

// summaryCount reads a record count (added-records, total-records) from the
// summary of s; ok is false when s, its summary or the count is missing or
// not a number.
func summaryCount(s *table.Snapshot, key string) (int64, bool) {
	if s == nil || s.Summary == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(s.Summary.Properties[key], 10, 64)
	return n, err == nil
}
