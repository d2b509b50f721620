package lsm

import (
	"context"
	"fmt"

	icebergio "github.com/apache/iceberg-go/io"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

// liveRow is the current image of a key: the one row of the key in a live
// data file at a position no delete file deletes.
type liveRow struct {
	row  Row
	file *runFile
	pos  int64
	seq  int64
	// dups are further live rows of the key. lakegw never leaves two (each
	// commit deletes the image it replaces); should another writer have,
	// the newest wins and the rest are deleted by the next commit of the key.
	dups []rowLoc
}

type rowLoc struct {
	file *runFile
	pos  int64
}

// lookup finds the current image of each key in a bucket's files: key
// bounds from the manifests rule files out, then bloom filters (for a few
// keys), then the decoded file (cached) answers by key index.
func (t *Table) lookup(ctx context.Context, fs icebergio.IO, sp *spec, files []*runFile, keys []string, keyRows []Row) (map[string]*liveRow, error) {
	out := make(map[string]*liveRow, len(keys))
	for _, f := range files {
		var cand []int
		for i := range keys {
			if f.mayContain(sp, keyRows[i]) {
				cand = append(cand, i)
			}
		}
		if len(cand) == 0 {
			continue
		}
		if _, cached := t.cache.get(runCacheKey(f.path)); !cached && len(cand) <= bloomProbeMax {
			var err error
			if cand, err = bloomCandidates(fs, sp, f.path, keyRows, cand); err != nil {
				return nil, err
			}
			if len(cand) == 0 {
				continue
			}
		}
		data, err := t.runData(ctx, fs, sp, f.path)
		if err != nil {
			return nil, err
		}
		deleted, err := t.deletedPositions(ctx, fs, f)
		if err != nil {
			return nil, err
		}
		for _, i := range cand {
			pos, ok := data.index[keys[i]]
			if !ok || deleted[int64(pos)] {
				continue
			}
			lr := &liveRow{row: data.rows[pos], file: f, pos: int64(pos), seq: data.seqs[pos]}
			prev := out[keys[i]]
			switch {
			case prev == nil:
				out[keys[i]] = lr
			case lr.seq > prev.seq:
				lr.dups = append(prev.dups, rowLoc{prev.file, prev.pos})
				out[keys[i]] = lr
			default:
				prev.dups = append(prev.dups, rowLoc{f, int64(pos)})
			}
		}
	}
	return out, nil
}

func runCacheKey(path string) string    { return "run:" + path }
func deleteCacheKey(path string) string { return "del:" + path }

// runData returns a decoded sorted run, from the cache when it is hot.
func (t *Table) runData(ctx context.Context, fs icebergio.IO, sp *spec, path string) (*runData, error) {
	if v, ok := t.cache.get(runCacheKey(path)); ok {
		return v.(*runData), nil
	}
	d, err := readRun(ctx, fs, sp, path)
	if err != nil {
		return nil, err
	}
	t.cache.add(runCacheKey(path), d, d.bytes)
	return d, nil
}

// deletedPositions returns the positions of f that its deletion vector
// or, without one, its position delete files delete.
func (t *Table) deletedPositions(ctx context.Context, fs icebergio.IO, f *runFile) (map[int64]bool, error) {
	out := map[int64]bool{}
	if f.dv != nil {
		bm, err := t.deletionVector(fs, f.dv)
		if err != nil {
			return nil, fmt.Errorf("deletion vector of %s: %w", f.path, err)
		}
		for p := range bm.Positions() {
			out[int64(p)] = true
		}
		return out, nil
	}
	for _, d := range f.deletes {
		var byFile map[string][]int64
		if v, ok := t.cache.get(deleteCacheKey(d.FilePath())); ok {
			byFile = v.(map[string][]int64)
		} else {
			var err error
			if byFile, err = icefiles.ReadPositionDeletes(ctx, fs, d.FilePath()); err != nil {
				return nil, fmt.Errorf("deletes of %s: %w", f.path, err)
			}
			var size int64
			for p, ps := range byFile {
				size += int64(len(p)) + 8*int64(len(ps)) + 64
			}
			t.cache.add(deleteCacheKey(d.FilePath()), byFile, size)
		}
		for _, p := range byFile[f.path] {
			out[p] = true
		}
	}
	return out, nil
}
