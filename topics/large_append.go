package topics

import (
	"context"
	"strconv"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
)

// DefaultIndexDeriveMaxRecords is the largest append a watcher derives to
// index it (Config.IndexDeriveMaxRecords).
const DefaultIndexDeriveMaxRecords = 100_000

// countLargeAppend counts a new snapshot from its manifests when its
// summary says it appends more than the configured records: a small one
// is derived and cached for the consumers at the tail, who read it next,
// but a table's bootstrap snapshot (ten million rows are about 1.9 GiB
// decoded) would be derived whole only to be counted, then derived again
// by the first fetch. ok is false when the snapshot is to be derived.
func (w *watcher) countLargeAppend(ctx context.Context, tbl *table.Table, ref changelog.SnapshotRef, enc *Encoding) (counts []int64, ok bool, err error) {
	s := snapshotOf(tbl, w.topic.retained.Load(), ref)
	if s == nil || s.Summary == nil || s.Summary.Properties == nil {
		return nil, false, nil
	}
	// The summary only decides whether to look: the count comes from the
	// manifests (derive.AppendCount), which a summary may disagree with.
	added, err := strconv.ParseInt(s.Summary.Properties["added-records"], 10, 64)
	if err != nil || added <= w.r.cfg.IndexDeriveMaxRecords {
		return nil, false, nil
	}
	n, ok, err := derive.AppendCount(ctx, w.readable(tbl, ref.SnapshotID), ref, w.topic.deriveOptions(enc))
	if err != nil || !ok {
		return nil, false, err
	}
	return []int64{n}, true, nil
}
