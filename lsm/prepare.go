package lsm

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	icefiles "github.com/lakegw/lakegw/lake/files"
)

// bucketOut is what preparing one bucket wrote: a new L0 sorted run of the
// merged images, position deletes (v2) or deletion vectors (v3) of the
// images they replace, and the bucket's changelog file.
type bucketOut struct {
	bucket     int
	data       iceberg.DataFile   // nil when no image was written
	deletes    []iceberg.DataFile // position delete files or DVs
	removedDVs []iceberg.DataFile // DVs superseded by the new DVs
	changelog  *changelog.LSMFile
	written    []string // every file written, for cleanup
	bytes      int64
	records    int64
}

// event is one change of a key: before and/or after image.
type event struct {
	before, after Row
}

// prepareBucket is the lookup compaction of one bucket at commit time:
// look up each written key's current image, fold the writes into it with
// the merge engine, and write what changed.
func (t *Table) prepareBucket(ctx context.Context, fs icebergio.WriteFileIO, tbl *table.Table, sp *spec, st *state, bw bucketWrites) (*bucketOut, error) {
	out := &bucketOut{bucket: bw.bucket}
	keyRows := make([]Row, len(bw.keys))
	for i := range bw.keys {
		keyRows[i] = bw.ops[i][0].row
	}
	live, err := t.lookup(ctx, fs, sp, st.buckets[bw.bucket], bw.keys, keyRows)
	if err != nil {
		return out, fmt.Errorf("bucket %d lookup: %w", bw.bucket, err)
	}
	var (
		images  []Row
		events  []event
		deletes = map[*runFile][]int64{}
	)
	for i, k := range bw.keys {
		lr := live[k]
		var old Row
		if lr != nil {
			old = lr.row
			for _, d := range lr.dups {
				deletes[d.file] = append(deletes[d.file], d.pos)
			}
		}
		cur := old
		for _, o := range bw.ops[i] {
			if o.del {
				cur = nil
				continue
			}
			if cur, err = sp.engine.merge(sp, cur, o.row); err != nil {
				return out, fmt.Errorf("bucket %d: merge a write of key %s: %w", bw.bucket, sp.describeKey(o.row), err)
			}
		}
		switch {
		case old == nil && cur == nil:
			continue
		case old != nil && cur != nil && equalRows(old, cur):
			// Nothing changed: no event, and the stored image stays.
			continue
		}
		if old != nil {
			deletes[lr.file] = append(deletes[lr.file], lr.pos)
		}
		if cur != nil {
			images = append(images, cur)
		}
		events = append(events, event{before: old, after: cur})
	}
	l := newLayout(tbl.Location())
	if len(images) > 0 {
		path := l.dataFile(bw.bucket, 0, st.seq)
		out.written = append(out.written, path)
		seqs := make([]int64, len(images))
		for i := range seqs {
			seqs[i] = st.seq
		}
		df, n, err := writeRun(fs, tbl, sp, path, images, seqs)
		if err != nil {
			return out, err
		}
		out.data, out.bytes = df, out.bytes+n
	}
	files := make([]*runFile, 0, len(deletes))
	for f := range deletes {
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b *runFile) int { return compareStrings(a.path, b.path) })
	switch {
	case len(files) == 0:
	case usesDeletionVectors(tbl):
		// v3: one Puffin file of DVs for the bucket, each the union
		// of the data file's old and new deleted positions.
		path := l.dvFile(bw.bucket, st.seq)
		out.written = append(out.written, path)
		added, superseded, n, err := t.writeDeletionVectors(ctx, fs, tbl, path, files, deletes)
		if err != nil {
			return out, err
		}
		out.deletes, out.removedDVs, out.bytes = added, superseded, out.bytes+n
	default:
		// v2: one file-scoped position delete file per data file.
		for _, f := range files {
			path := l.deleteFile(bw.bucket, st.seq)
			out.written = append(out.written, path)
			df, n, err := icefiles.WritePositionDeletes(fs, tbl.Spec(), path, f.path, deletes[f])
			if err != nil {
				return out, err
			}
			out.deletes, out.bytes = append(out.deletes, df), out.bytes+n
		}
	}
	if len(events) > 0 {
		path := l.changelogFile(bw.bucket, st.seq)
		out.written = append(out.written, path)
		lf, n, err := writeChangelog(fs, sp, path, bw.bucket, events)
		if err != nil {
			return out, err
		}
		out.changelog, out.bytes, out.records = lf, out.bytes+n, lf.Records
	}
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func equalRows(a, b Row) bool {
	return slices.EqualFunc(a, b, equalValues)
}

// writeChangelog writes a bucket's events in the schema changelog/ defines:
// one row per image, updates as a -U/+U pair.
func writeChangelog(fs icebergio.WriteFileIO, sp *spec, path string, bucket int, events []event) (*changelog.LSMFile, int64, error) {
	rows := make([]Row, 0, len(events)+len(events)/2)
	ops := make([]string, 0, cap(rows))
	for _, e := range events {
		switch {
		case e.before == nil:
			rows, ops = append(rows, e.after), append(ops, changelog.LSMOpInsert)
		case e.after == nil:
			rows, ops = append(rows, e.before), append(ops, changelog.LSMOpDelete)
		default:
			rows, ops = append(rows, e.before, e.after), append(ops, changelog.LSMOpUpdateBefore, changelog.LSMOpUpdateAfter)
		}
	}
	// The op column, then the table columns (changelog.LSMChangelogArrowSchema
	// is the same schema in Arrow terms). At most runRowGroupRows rows per
	// row group: the reader pairs -U/+U across batches anyway.
	cols := append([]pqCol{{name: changelog.LSMOpColumn, id: changelog.LSMOpFieldID, kind: kString, required: true}}, tableColumns(sp, false)...)
	body, err := encodeRows(cols, len(rows), runRowGroupRows, func(r, c int) any {
		if c == 0 {
			return ops[r]
		}
		return rows[r][c-1]
	})
	if err != nil {
		return nil, 0, fmt.Errorf("encode %s: %w", path, err)
	}
	if err := fs.WriteFile(path, body); err != nil {
		return nil, 0, fmt.Errorf("write %s: %w", path, err)
	}
	return &changelog.LSMFile{Bucket: bucket, Path: path, Records: int64(len(events)), Rows: int64(len(rows))}, int64(len(body)), nil
}
