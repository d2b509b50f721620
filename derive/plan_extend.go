package derive

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

// extendPlan derives the plan of snapshot s from the plan of its parent
// and the manifest entries s added and removed, applying the delete files
// exactly as iceberg-go's planner (table/scanner.go, positional_delete_index.go,
// v0.7.0) would at s. It handles what row-level commits do: data files
// added and removed, position deletes and deletion vectors added, delete
// files removed, a file's deletion vector replaced. It declines (false),
// leaving the snapshot to the planner, whenever the result could differ:
// equality deletes added (their statistics pruning is the planner's),
// entries not carrying the snapshot's sequence number (rewrites that keep
// older ones), a deletion vector removed from a live file without a
// replacement, two deletion vectors for one file (the planner's error),
// or a delta inconsistent with the parent's plan. Like the planner, it
// ignores empty files.
//
// The rules relied on, all from iceberg-go's planner:
//   - a position delete or deletion vector applies to a data file whose data
//     sequence number is at most its own; an equality delete to one whose
//     number is lower. Sequence numbers grow with every commit, so the delete
//     files of earlier snapshots never apply to s's new data files, and the
//     ones s adds apply to every live data file they match;
//   - a deletion vector applies to the data file it references, and a file
//     with one gets no position delete files;
//   - a position delete file that references one data file (explicitly or by
//     equal file_path bounds) applies to that file only; any other applies
//     to the data files of its partition (same spec, same values) that its
//     file_path bounds and counts do not exclude;
//   - the delete files of a task list partition-scoped files before
//     file-scoped ones, each by sequence number.
func extendPlan(tbl *table.Table, parent, s *table.Snapshot, before livePlan, delta *snapshotDelta) (livePlan, bool) {
	if delta == nil {
		return nil, false
	}
	// A snapshot without a parent starts from an empty table.
	var parentSeq int64
	switch {
	case s.ParentSnapshotID == nil:
		if len(before) > 0 {
			return nil, false
		}
	case parent == nil || parent.SnapshotID != *s.ParentSnapshotID || planKeyFor(tbl, parent).schema != planKeyFor(tbl, s).schema:
		return nil, false
	default:
		parentSeq = parent.SequenceNumber
	}
	// The planner skips empty files (its metrics evaluator: no rows can
	// match), data and delete files alike.
	delta = &snapshotDelta{
		addedData: nonEmpty(delta.addedData), removedData: nonEmpty(delta.removedData),
		addedDeletes: nonEmpty(delta.addedDeletes), removedDeletes: nonEmpty(delta.removedDeletes),
	}
	seq := s.SequenceNumber
	hasDeletes := len(delta.addedDeletes) > 0 || len(delta.removedDeletes) > 0
	if seq <= parentSeq && (tbl.Metadata().Version() > 1 || hasDeletes) {
		return nil, false
	}
	for _, e := range delta.addedData {
		if e.SequenceNum() != seq {
			return nil, false
		}
	}
	// Deletion vectors added, by the data file they reference.
	addedDVs := map[string]iceberg.DataFile{}
	var addedPos []iceberg.DataFile
	for _, e := range delta.addedDeletes {
		df := e.DataFile()
		if e.SequenceNum() != seq || df.ContentType() != iceberg.EntryContentPosDeletes {
			return nil, false
		}
		if !table.IsDeletionVector(df) {
			addedPos = append(addedPos, df)
			continue
		}
		ref := df.ReferencedDataFile()
		if ref == nil {
			continue // the planner does not index it
		}
		if _, dup := addedDVs[*ref]; dup {
			return nil, false
		}
		addedDVs[*ref] = df
	}

	// The files s adds enter the plan slimmed (slimFile), one copy each.
	seen := map[slimKey]iceberg.DataFile{}
	after := maps.Clone(before)
	for _, e := range delta.removedData {
		p := e.DataFile().FilePath()
		if _, ok := after[p]; !ok {
			return nil, false
		}
		delete(after, p)
	}
	for _, e := range delta.addedData {
		df := e.DataFile()
		p := df.FilePath()
		if _, ok := after[p]; ok {
			return nil, false
		}
		t := table.FileScanTask{File: slimShared(df, seen), Length: df.FileSizeBytes(), FirstRowID: df.FirstRowID()}
		if n := e.SequenceNum(); n >= 0 {
			t.DataSequenceNumber = &n
		}
		after[t.File.FilePath()] = t
	}

	// Delete files removed leave the tasks that list them. Deletion
	// vectors are told apart by the data file they reference: one Puffin
	// file holds the vectors of many data files.
	if len(delta.removedDeletes) > 0 {
		removed := map[string]bool{}
		for _, e := range delta.removedDeletes {
			df := e.DataFile()
			if !table.IsDeletionVector(df) {
				removed[df.FilePath()] = true
				continue
			}
			ref := df.ReferencedDataFile()
			if ref == nil {
				continue // never indexed by the planner
			}
			t, live := after[*ref]
			if !live {
				continue
			}
			// Without its deletion vector, a live file's position
			// delete files would apply again: the planner decides.
			if _, replaced := addedDVs[*ref]; !replaced {
				return nil, false
			}
			t.DeletionVectorFiles = slices.DeleteFunc(slices.Clone(t.DeletionVectorFiles),
				func(f iceberg.DataFile) bool { return f.FilePath() == df.FilePath() })
			after[*ref] = t
		}
		drop := func(l []iceberg.DataFile) ([]iceberg.DataFile, bool) {
			if !slices.ContainsFunc(l, func(f iceberg.DataFile) bool { return removed[f.FilePath()] }) {
				return l, false
			}
			return slices.DeleteFunc(slices.Clone(l), func(f iceberg.DataFile) bool { return removed[f.FilePath()] }), true
		}
		if len(removed) > 0 {
			for p, t := range after {
				var c1, c2 bool
				t.DeleteFiles, c1 = drop(t.DeleteFiles)
				t.EqualityDeleteFiles, c2 = drop(t.EqualityDeleteFiles)
				if c1 || c2 {
					after[p] = t
				}
			}
		}
	}

	for ref, dv := range addedDVs {
		t, ok := after[ref]
		if !ok {
			continue
		}
		if len(t.DeletionVectorFiles) > 0 {
			return nil, false // two deletion vectors for one file
		}
		if dataSeq(t) > seq {
			return nil, false
		}
		t.DeletionVectorFiles = []iceberg.DataFile{slimShared(dv, seen)}
		t.DeleteFiles = nil
		after[ref] = t
	}

	if len(addedPos) > 0 {
		// The position delete files each task gains, partition-scoped
		// and file-scoped apart.
		type gain struct{ part, file []iceberg.DataFile }
		gains := map[string]*gain{}
		add := func(p string, df iceberg.DataFile, fileScoped bool) {
			t := after[p]
			if len(t.DeletionVectorFiles) > 0 || dataSeq(t) > seq {
				return
			}
			g := gains[p]
			if g == nil {
				g = &gain{}
				gains[p] = g
			}
			if fileScoped {
				g.file = append(g.file, slimShared(df, seen))
			} else {
				g.part = append(g.part, slimShared(df, seen))
			}
		}
		var byPartition map[string][]string // partition key -> data file paths
		for _, df := range addedPos {
			if ref := icefiles.PositionDeleteTarget(df); ref != "" {
				if _, ok := after[ref]; ok {
					add(ref, df, true)
				}
				continue
			}
			if byPartition == nil {
				byPartition = map[string][]string{}
				for p, t := range after {
					key, err := canonicalPartitionKey(t.File.SpecID(), t.File.Partition())
					if err != nil {
						return nil, false
					}
					byPartition[key] = append(byPartition[key], p)
				}
			}
			key, err := canonicalPartitionKey(df.SpecID(), df.Partition())
			if err != nil {
				return nil, false
			}
			for _, p := range byPartition[key] {
				if filePathMayMatch(df, p) {
					add(p, df, false)
				}
			}
		}
		for p, g := range gains {
			t := after[p]
			var part, file []iceberg.DataFile
			for _, f := range t.DeleteFiles {
				if icefiles.PositionDeleteTarget(f) != "" {
					file = append(file, f)
				} else {
					part = append(part, f)
				}
			}
			t.DeleteFiles = slices.Concat(part, g.part, file, g.file)
			after[p] = t
		}
	}
	return after, true
}

func nonEmpty(entries []iceberg.ManifestEntry) []iceberg.ManifestEntry {
	if !slices.ContainsFunc(entries, func(e iceberg.ManifestEntry) bool { return e.DataFile().Count() == 0 }) {
		return entries
	}
	return slices.DeleteFunc(slices.Clone(entries), func(e iceberg.ManifestEntry) bool { return e.DataFile().Count() == 0 })
}

// dataSeq is the data sequence number of a task's file, -1 when unknown
// (as iceberg.ManifestEntry.SequenceNum reports it).
func dataSeq(t table.FileScanTask) int64 {
	if t.DataSequenceNumber == nil {
		return -1
	}
	return *t.DataSequenceNumber
}

// filePathMayMatch reports whether a partition-scoped position delete file
// may hold positions of the data file, by its row count and file_path
// statistics (iceberg-go's filePathMayMatch).
func filePathMayMatch(del iceberg.DataFile, dataFilePath string) bool {
	if del.Count() == 0 {
		return false
	}
	if valueCount, ok := del.ValueCounts()[icefiles.PosDeleteFilePathID]; ok {
		if nullCount, ok := del.NullValueCounts()[icefiles.PosDeleteFilePathID]; ok && nullCount == valueCount {
			return false
		}
		if nanCount, ok := del.NaNValueCounts()[icefiles.PosDeleteFilePathID]; ok && nanCount == valueCount {
			return false
		}
	}
	if lower := del.LowerBoundValues()[icefiles.PosDeleteFilePathID]; lower != nil && bytes.Compare(lower, []byte(dataFilePath)) > 0 {
		return false
	}
	if upper := del.UpperBoundValues()[icefiles.PosDeleteFilePathID]; upper != nil && bytes.Compare(upper, []byte(dataFilePath)) < 0 {
		return false
	}
	return true
}

// canonicalPartitionKey is iceberg-go's key of a (spec, partition) tuple for
// matching position deletes to data files: equal keys for equal values
// across the Go representations of one logical type, an error for an
// unknown value type (the planner fails on it too).
func canonicalPartitionKey(specID int32, partition map[int]any) (string, error) {
	ids := slices.Sorted(maps.Keys(partition))
	buf := strconv.AppendInt(nil, int64(specID), 10)
	buf = append(buf, '|')
	for _, id := range ids {
		buf = strconv.AppendInt(buf, int64(id), 10)
		buf = append(buf, ':')
		var err error
		if buf, err = appendCanonicalPartitionValue(buf, partition[id]); err != nil {
			return "", fmt.Errorf("partition field %d: %w", id, err)
		}
		buf = append(buf, ';')
	}
	return string(buf), nil
}

func appendCanonicalPartitionValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, 'z'), nil
	case bool:
		return strconv.AppendBool(append(dst, 'b', ':'), v), nil
	case int:
		return strconv.AppendInt(append(dst, 'i', ':'), int64(v), 10), nil
	case int32:
		return strconv.AppendInt(append(dst, 'i', ':'), int64(v), 10), nil
	case int64:
		return strconv.AppendInt(append(dst, 'i', ':'), v, 10), nil
	case iceberg.Date:
		return strconv.AppendInt(append(dst, 'i', ':'), int64(v), 10), nil
	case iceberg.Time:
		return strconv.AppendInt(append(dst, 'i', ':'), int64(v), 10), nil
	case iceberg.Timestamp:
		return strconv.AppendInt(append(dst, 'i', ':'), int64(v), 10), nil
	case iceberg.TimestampNano:
		return strconv.AppendInt(append(dst, 'i', ':'), int64(v), 10), nil
	case float32:
		return strconv.AppendFloat(append(dst, 'f', ':'), float64(v), 'x', -1, 64), nil
	case float64:
		return strconv.AppendFloat(append(dst, 'f', ':'), v, 'x', -1, 64), nil
	case string:
		dst = strconv.AppendInt(append(dst, 's', ':'), int64(len(v)), 10)
		return append(append(dst, ':'), v...), nil
	case []byte:
		return hex.AppendEncode(append(dst, 'B', ':'), v), nil
	case uuid.UUID:
		return hex.AppendEncode(append(dst, 'B', ':'), v[:]), nil
	case iceberg.Decimal:
		return appendCanonicalPartitionDecimal(dst, v), nil
	case iceberg.DecimalLiteral:
		return appendCanonicalPartitionDecimal(dst, iceberg.Decimal(v)), nil
	default:
		return nil, fmt.Errorf("unsupported partition value type %T in canonical key", v)
	}
}

func appendCanonicalPartitionDecimal(dst []byte, v iceberg.Decimal) []byte {
	dst = strconv.AppendInt(append(dst, 'd', ':'), int64(v.Scale), 10)
	return append(append(dst, ':'), v.Val.BigInt().String()...)
}
