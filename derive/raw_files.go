package derive

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	icefiles "github.com/lakegw/lakegw/lake/files"
)

// RawFiles locates the records of a raw topic (changelog.PropRaw) in its
// table's live data files: each file holds one Kafka partition (the
// table's identity partition) and a contiguous run of its offsets, whose
// bounds its manifest entry records. A read by offset needs neither the
// snapshot that added the rows nor any snapshot history, so expiry,
// manifest merges and restarts leave it unchanged.
//
// The entries of each manifest are read once and kept while the table's
// current snapshot lists that manifest: a new commit costs the read of its
// own manifest, not of the table's history.
type RawFiles struct {
	mu         sync.Mutex
	snapshotID int64
	parts      [][]rawFile
	manifests  map[string][]rawFile
}

// rawFile is one data file of a raw topic's table: partition's offsets
// first..first+count-1.
type rawFile struct {
	partition int32
	first     int64
	count     int64
	df        iceberg.DataFile
}

// NewRawFiles returns an empty locator; it loads on first use.
func NewRawFiles() *RawFiles { return &RawFiles{} }

// files returns, per partition, the live data files of tbl's current
// snapshot sorted by first offset.
func (f *RawFiles) files(tbl *table.Table, partitions int32) ([][]rawFile, error) {
	snap := tbl.CurrentSnapshot()
	f.mu.Lock()
	defer f.mu.Unlock()
	if snap == nil {
		return make([][]rawFile, partitions), nil
	}
	if f.parts != nil && f.snapshotID == snap.SnapshotID && int32(len(f.parts)) == partitions {
		return f.parts, nil
	}
	fs, err := tbl.FS(context.Background())
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	manifests, err := readManifestList(fs, snap)
	if err != nil {
		return nil, err
	}
	kept := make(map[string][]rawFile, len(manifests))
	parts := make([][]rawFile, partitions)
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			return nil, fmt.Errorf("raw topic table %s has delete manifest %s: lakegw never deletes its rows, another writer did",
				tableName(tbl), m.FilePath())
		}
		entries, ok := f.manifests[m.FilePath()]
		if !ok {
			if entries, err = rawManifestFiles(fs, m); err != nil {
				return nil, err
			}
		}
		kept[m.FilePath()] = entries
		for _, e := range entries {
			if e.partition < 0 || e.partition >= partitions {
				return nil, fmt.Errorf("data file %s holds Kafka partition %d; the topic has %d", e.df.FilePath(), e.partition, partitions)
			}
			parts[e.partition] = append(parts[e.partition], e)
		}
	}
	for p := range parts {
		sort.Slice(parts[p], func(i, j int) bool { return parts[p][i].first < parts[p][j].first })
	}
	f.snapshotID, f.parts, f.manifests = snap.SnapshotID, parts, kept
	return parts, nil
}

// rawManifestFiles reads the live data files of one manifest of a raw
// topic's table with their partition and offset bounds.
func rawManifestFiles(fs icebergio.IO, m iceberg.ManifestFile) ([]rawFile, error) {
	entries, err := icefiles.ManifestEntries(fs, m, true)
	if err != nil {
		return nil, err
	}
	out := make([]rawFile, 0, len(entries))
	for _, e := range entries {
		df := e.DataFile()
		if df.ContentType() != iceberg.EntryContentData {
			continue
		}
		f, err := rawEntry(df)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		out = append(out, f)
	}
	return out, nil
}

// rawEntry turns a manifest entry into a rawFile, refusing a file whose
// bounds do not make a contiguous run of offsets of one partition.
func rawEntry(df iceberg.DataFile) (rawFile, error) {
	part, ok := df.Partition()[changelog.RawSpecFieldID]
	if !ok {
		return rawFile{}, fmt.Errorf("data file %s has no Kafka partition value", df.FilePath())
	}
	p, ok := part.(int32)
	if !ok {
		return rawFile{}, fmt.Errorf("data file %s: Kafka partition value %v is a %T, not an int", df.FilePath(), part, part)
	}
	lo, okLo := df.LowerBoundValues()[changelog.RawOffsetFieldID]
	hi, okHi := df.UpperBoundValues()[changelog.RawOffsetFieldID]
	if !okLo || !okHi || len(lo) != 8 || len(hi) != 8 {
		return rawFile{}, fmt.Errorf("data file %s records no offset bounds", df.FilePath())
	}
	first, last := int64(binary.LittleEndian.Uint64(lo)), int64(binary.LittleEndian.Uint64(hi))
	if first < 0 || last-first+1 != df.Count() {
		return rawFile{}, fmt.Errorf("data file %s holds %d records at offsets %d..%d: not a contiguous run", df.FilePath(), df.Count(), first, last)
	}
	return rawFile{partition: p, first: first, count: df.Count(), df: df}, nil
}

// covering returns the files of one partition holding offsets
// [from, from+n), in offset order, or an error naming the first offset no
// live file holds.
func covering(files []rawFile, from, n int64) ([]rawFile, error) {
	i := sort.Search(len(files), func(i int) bool { return files[i].first+files[i].count > from })
	var out []rawFile
	next := from
	for ; i < len(files) && next < from+n; i++ {
		f := files[i]
		if f.first > next {
			break
		}
		out = append(out, f)
		next = f.first + f.count
	}
	if next < from+n {
		return nil, fmt.Errorf("no live data file holds offset %d", next)
	}
	return slices.Clip(out), nil
}
