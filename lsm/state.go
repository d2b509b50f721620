package lsm

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// runFile is one live data file of an LSM table: a sorted run (L0) or part
// of a level's run.
type runFile struct {
	df     iceberg.DataFile
	path   string
	bucket int
	level  int
	seq    int64 // from the path: the sequence number it was written at
	// dataSeq is its Iceberg data sequence number.
	dataSeq int64
	// deletes are the position delete files that apply to it (v2
	// tables); dv is its deletion vector (v3 tables: at most one per data
	// file, and when there is one, readers ignore position deletes).
	deletes []iceberg.DataFile
	dv      iceberg.DataFile
	// lower/upper are the manifest bounds of each key column (by
	// spec.keyIdx order); nil when the manifest has none.
	lower, upper []any
}

// hasDeletes reports whether any row of the file is deleted.
func (f *runFile) hasDeletes() bool { return f.dv != nil || len(f.deletes) > 0 }

// deleteFiles are the delete files of the file that go with it when
// compaction replaces it: its position delete files and its DV.
func (f *runFile) deleteFiles() []iceberg.DataFile {
	out := slices.Clone(f.deletes)
	if f.dv != nil {
		out = append(out, f.dv)
	}
	return out
}

// state is the LSM structure of one table snapshot, recovered from the
// Iceberg plan of that snapshot.
type state struct {
	tbl        *table.Table
	snapshotID int64 // 0: no snapshot yet
	// seq is the sequence number the next commit gets (and writes into
	// its rows' sequence column).
	seq     int64
	buckets [][]*runFile // per bucket, newest first
}

// loadState plans the head snapshot; filter (nil: everything) prunes the
// plan by manifest statistics, as point lookups do.
func loadState(ctx context.Context, tbl *table.Table, sp *spec, filter iceberg.BooleanExpression) (*state, error) {
	st := &state{tbl: tbl, seq: tbl.Metadata().LastSequenceNumber() + 1, buckets: make([][]*runFile, sp.buckets)}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return st, nil
	}
	st.snapshotID = snap.SnapshotID
	opts := []table.ScanOption{table.WithSnapshotID(snap.SnapshotID)}
	if filter != nil {
		opts = append(opts, table.WithRowFilter(filter))
	}
	tasks, err := tbl.Scan(opts...).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files of snapshot %d: %w", snap.SnapshotID, err)
	}
	seen := map[string]bool{}
	for _, t := range tasks {
		path := t.File.FilePath()
		if seen[path] {
			continue // a split of a large file
		}
		seen[path] = true
		if len(t.EqualityDeleteFiles) > 0 {
			return nil, fmt.Errorf("data file %s has equality deletes: lakegw LSM tables use position deletes or deletion vectors only", path)
		}
		if len(t.DeletionVectorFiles) > 1 {
			return nil, fmt.Errorf("data file %s has %d deletion vectors: Iceberg allows one per data file", path, len(t.DeletionVectorFiles))
		}
		b, level, seq, err := parseDataPath(path)
		if err != nil {
			return nil, err
		}
		if b >= sp.buckets {
			return nil, fmt.Errorf("data file %s is in bucket %d, the table has %d buckets", path, b, sp.buckets)
		}
		f := &runFile{df: t.File, path: path, bucket: b, level: level, seq: seq, deletes: t.DeleteFiles}
		if len(t.DeletionVectorFiles) == 1 {
			f.dv = t.DeletionVectorFiles[0]
		}
		if t.DataSequenceNumber != nil {
			f.dataSeq = *t.DataSequenceNumber
		}
		f.lower, f.upper = keyBounds(sp, t.File)
		st.buckets[b] = append(st.buckets[b], f)
	}
	for _, files := range st.buckets {
		// Newest first: L0 by descending sequence, then levels 1, 2, ...
		slices.SortFunc(files, func(a, b *runFile) int {
			if (a.level == 0) != (b.level == 0) {
				if a.level == 0 {
					return -1
				}
				return 1
			}
			if a.level == 0 {
				return cmp.Compare(b.seq, a.seq)
			}
			return cmp.Or(cmp.Compare(a.level, b.level), cmp.Compare(a.seq, b.seq), cmp.Compare(a.path, b.path))
		})
	}
	return st, nil
}

// keyBounds decodes the manifest bounds of the key columns.
func keyBounds(sp *spec, df iceberg.DataFile) (lower, upper []any) {
	lb, ub := df.LowerBoundValues(), df.UpperBoundValues()
	lower, upper = make([]any, len(sp.keyIdx)), make([]any, len(sp.keyIdx))
	for i, ci := range sp.keyIdx {
		id := sp.schema.Field(ci).ID
		if v, ok := lb[id]; ok {
			lower[i], _ = decodeBound(v, sp.kinds[ci], sp.decs[ci])
		}
		if v, ok := ub[id]; ok {
			upper[i], _ = decodeBound(v, sp.kinds[ci], sp.decs[ci])
		}
	}
	return lower, upper
}

// mayContain reports whether the file's key bounds admit the key values
// (a bounding box per key column; missing bounds admit anything).
func (f *runFile) mayContain(sp *spec, r Row) bool {
	for i, ci := range sp.keyIdx {
		v := r[ci]
		if f.lower[i] != nil && compareValues(v, f.lower[i]) < 0 {
			return false
		}
		if f.upper[i] != nil && compareValues(v, f.upper[i]) > 0 {
			return false
		}
	}
	return true
}

// cacheKeys names every file cache entry the state's files can use: its
// runs, their position delete files and deletion vectors.
func (st *state) cacheKeys() map[string]bool {
	keys := map[string]bool{}
	for _, files := range st.buckets {
		for _, f := range files {
			keys[runCacheKey(f.path)] = true
			for _, d := range f.deleteFiles() {
				keys[deleteCacheKey(d.FilePath())] = true
				keys[dvCacheKey(d)] = true
			}
		}
	}
	return keys
}
