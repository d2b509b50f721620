package changelog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// SummaryLSMEnds is the snapshot summary key with, per bucket, the offset
// after the snapshot's last change record: the sum of the change counts of
// the snapshot and of every ancestor ("12,0,40"). With it an offset index
// is rebuilt from table metadata alone even after older snapshots expired
// (state store lost, a second gateway): the oldest retained snapshot says
// where its offsets start, so every gateway numbers the same records alike.
const SummaryLSMEnds = "lakegw.lsm.changelog-ends"

// EncodeLSMEnds renders per-bucket end offsets for the summary.
func EncodeLSMEnds(ends []int64) string { return EncodeLSMCounts(ends) }

// parsePartitionInts parses a comma-separated list of n non-negative
// integers, one per partition; grown says the table's partitions may have
// grown since (a raw topic: CreatePartitions), so fewer values are those of
// the first partitions, the others 0.
func parsePartitionInts(v string, n int, grown bool) ([]int64, error) {
	parts := strings.Split(v, ",")
	if len(parts) != n && (!grown || len(parts) > n) {
		return nil, fmt.Errorf("%q has %d values, want %d", v, len(parts), n)
	}
	out := make([]int64, n) // a grown table's new partitions: 0
	for i, p := range parts {
		c, err := strconv.ParseInt(p, 10, 64)
		if err != nil || c < 0 {
			return nil, fmt.Errorf("%q: bad value %q", v, p)
		}
		out[i] = c
	}
	return out, nil
}

// LSMEnds returns the end offsets per bucket after snapshot s of an LSM
// table: the ends its writer recorded, or, for a snapshot that records none
// (a compaction, a manifest rewrite, a table written before ends were
// recorded), those of its nearest ancestor that does plus the counts in
// between. From the table's first snapshot the ends are the sum of all
// counts. ok is false when the walk reaches an expired snapshot before any
// recorded ends: the offsets of the history before it are unknown.
func LSMEnds(meta table.Metadata, s *table.Snapshot, buckets int) (ends []int64, ok bool, err error) {
	if ends, ok, err = lsmEndsBack(meta, s, buckets); ok || err != nil {
		return ends, ok, err
	}
	return lsmEndsForward(meta, s, buckets)
}

// lsmEndsBack adds up counts from s back to the nearest snapshot that
// records its ends.
func lsmEndsBack(meta table.Metadata, s *table.Snapshot, buckets int) (ends []int64, ok bool, err error) {
	props := meta.Properties()
	acc := make([]int64, buckets)
	seen := 0
	for cur := s; cur != nil; {
		if seen++; seen > len(meta.Snapshots())+1 {
			return nil, false, fmt.Errorf("snapshot %d: its ancestry loops", s.SnapshotID)
		}
		if cur.Summary != nil {
			if v, has := cur.Summary.Properties[SummaryLSMEnds]; has {
				recorded, err := parsePartitionInts(v, buckets, IsRawTable(props))
				if err != nil {
					return nil, false, fmt.Errorf("snapshot %d: %s: %w", cur.SnapshotID, SummaryLSMEnds, err)
				}
				for i := range acc {
					acc[i] += recorded[i]
				}
				return acc, true, nil
			}
		}
		counts, has, err := CountsFromSummary(props, cur, int32(buckets))
		if err != nil {
			return nil, false, err
		}
		if !has {
			return nil, false, nil // another writer's snapshot: its counts are the gateway's to derive
		}
		for i := range acc {
			acc[i] += counts[i]
		}
		if cur.ParentSnapshotID == nil {
			return acc, true, nil
		}
		cur = meta.SnapshotByID(*cur.ParentSnapshotID)
	}
	return nil, false, nil
}

// lsmEndsForward finds s's ends from its nearest descendant that records
// them, less the counts in between: the oldest retained snapshot may be one
// that records none (a manifest rewrite by maintenance) while its parent
// expired.
func lsmEndsForward(meta table.Metadata, s *table.Snapshot, buckets int) (ends []int64, ok bool, err error) {
	children := map[int64]*table.Snapshot{}
	for i, c := range meta.Snapshots() {
		if c.ParentSnapshotID != nil {
			children[*c.ParentSnapshotID] = &meta.Snapshots()[i]
		}
	}
	sub := make([]int64, buckets)
	for cur, n := children[s.SnapshotID], 0; cur != nil && n <= len(children); cur, n = children[cur.SnapshotID], n+1 {
		counts, has, err := CountsFromSummary(meta.Properties(), cur, int32(buckets))
		if err != nil || !has {
			return nil, false, err
		}
		for i := range sub {
			sub[i] += counts[i]
		}
		if cur.Summary == nil {
			continue
		}
		v, recorded := cur.Summary.Properties[SummaryLSMEnds]
		if !recorded {
			continue
		}
		ends, err := parsePartitionInts(v, buckets, IsRawTable(meta.Properties()))
		if err != nil {
			return nil, false, fmt.Errorf("snapshot %d: %s: %w", cur.SnapshotID, SummaryLSMEnds, err)
		}
		for i := range ends {
			if ends[i] -= sub[i]; ends[i] < 0 {
				return nil, false, fmt.Errorf("snapshot %d: %s=%q is below the changes after snapshot %d", cur.SnapshotID, SummaryLSMEnds, v, s.SnapshotID)
			}
		}
		return ends, true, nil
	}
	return nil, false, nil
}
