package derive

import (
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

// slimFile is a data or delete file as a cached plan keeps it: what reading
// the file and applying it needs, and nothing decoded for planning alone.
// iceberg-go's manifest entry keeps seven statistics maps per file, their
// keys and bounds sub-allocated from the Avro decoder's shared buffers,
// so one cached entry kept a kilobyte or more of the manifest it came from
// alive; a PlanCache full of them was the largest part of a long-running
// gateway's live heap, and the collector scanned it on every cycle. Only
// the file_path statistics of a position delete file are kept (they name
// the one data file it applies to, icefiles.PositionDeleteTarget); every
// other statistic reads as absent, which a reader treats as unknown.
type slimFile struct {
	content       iceberg.ManifestEntryContent
	path          string
	format        iceberg.FileFormat
	partition     map[int]any
	count, size   int64
	specID        int32
	keyMetadata   []byte
	splitOffsets  []int64
	equalityIDs   []int
	sortOrderID   *int
	firstRowID    *int64
	referenced    *string
	contentOffset *int64
	contentSize   *int64
	// The file_path column's statistics, position delete files only.
	valueCounts, nullCounts, nanCounts map[int]int64
	lowerBounds, upperBounds           map[int][]byte
}

var _ iceberg.DataFile = (*slimFile)(nil)

// slim returns df as a slimFile, copying every string and slice out of the
// decoder's buffers. A slimFile is returned as it is.
func slim(df iceberg.DataFile) iceberg.DataFile {
	if df == nil {
		return nil
	}
	if s, ok := df.(*slimFile); ok {
		return s
	}
	s := &slimFile{
		content:       df.ContentType(),
		path:          strings.Clone(df.FilePath()),
		format:        df.FileFormat(),
		partition:     clonePartition(df.Partition()),
		count:         df.Count(),
		size:          df.FileSizeBytes(),
		specID:        df.SpecID(),
		keyMetadata:   slices.Clone(df.KeyMetadata()),
		splitOffsets:  slices.Clone(df.SplitOffsets()),
		equalityIDs:   slices.Clone(df.EqualityFieldIDs()),
		sortOrderID:   clonePtr(df.SortOrderID()),
		firstRowID:    clonePtr(df.FirstRowID()),
		contentOffset: clonePtr(df.ContentOffset()),
		contentSize:   clonePtr(df.ContentSizeInBytes()),
	}
	if ref := df.ReferencedDataFile(); ref != nil {
		r := strings.Clone(*ref)
		s.referenced = &r
	}
	if s.content == iceberg.EntryContentPosDeletes {
		id := icefiles.PosDeleteFilePathID
		s.valueCounts = oneCount(df.ValueCounts(), id)
		s.nullCounts = oneCount(df.NullValueCounts(), id)
		s.nanCounts = oneCount(df.NaNValueCounts(), id)
		s.lowerBounds = oneBound(df.LowerBoundValues(), id)
		if up := df.UpperBoundValues()[id]; s.lowerBounds != nil && string(up) == string(s.lowerBounds[id]) {
			// A file-scoped delete file (the common case): one map
			// serves both bounds, as neither is ever modified.
			s.upperBounds = s.lowerBounds
		} else {
			s.upperBounds = oneBound(df.UpperBoundValues(), id)
		}
	}
	return s
}

// slimTask is t with every file it reads slimmed, those already slimmed
// (by path and blob) taken from seen so that the tasks of one plan share
// one copy of a delete file.
func slimTask(t table.FileScanTask, seen map[slimKey]iceberg.DataFile) table.FileScanTask {
	t.File = slimShared(t.File, seen)
	t.DeleteFiles = slimAll(t.DeleteFiles, seen)
	t.EqualityDeleteFiles = slimAll(t.EqualityDeleteFiles, seen)
	t.DeletionVectorFiles = slimAll(t.DeletionVectorFiles, seen)
	return t
}

// slimKey tells files apart: the deletion vectors of many data files share
// one Puffin file, each at its own offset.
type slimKey struct {
	path   string
	offset int64
}

// slimFilesOf indexes the slim files of plan, for slimShared to reuse.
func slimFilesOf(plan livePlan) map[slimKey]iceberg.DataFile {
	seen := map[slimKey]iceberg.DataFile{}
	for _, t := range plan {
		seen[slimKeyOf(t.File)] = t.File
		for _, files := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, f := range files {
				seen[slimKeyOf(f)] = f
			}
		}
	}
	return seen
}

func slimKeyOf(df iceberg.DataFile) slimKey {
	k := slimKey{path: df.FilePath(), offset: -1}
	if off := df.ContentOffset(); off != nil {
		k.offset = *off
	}
	return k
}

func slimShared(df iceberg.DataFile, seen map[slimKey]iceberg.DataFile) iceberg.DataFile {
	if df == nil {
		return nil
	}
	k := slimKeyOf(df)
	if s, ok := seen[k]; ok && sameFile(s, df) {
		return s
	}
	s := slim(df)
	// Keyed by the copy: k's path is the decoder's, sharing its buffer.
	seen[slimKeyOf(s)] = s
	return s
}

func slimAll(files []iceberg.DataFile, seen map[slimKey]iceberg.DataFile) []iceberg.DataFile {
	if len(files) == 0 {
		return files
	}
	out := make([]iceberg.DataFile, len(files))
	for i, f := range files {
		out[i] = slimShared(f, seen)
	}
	return out
}

// sameFile reports whether a slim copy s can stand for df: one path names
// one immutable file, but a copy made from another plan is checked for the
// fields that tell files apart before it is shared.
func sameFile(s, df iceberg.DataFile) bool {
	return s.FileSizeBytes() == df.FileSizeBytes() && s.Count() == df.Count() && s.ContentType() == df.ContentType() &&
		s.SpecID() == df.SpecID() && equalPtr(s.ContentSizeInBytes(), df.ContentSizeInBytes()) && equalPtr(s.FirstRowID(), df.FirstRowID())
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func clonePartition(p map[int]any) map[int]any {
	if len(p) == 0 {
		return nil
	}
	out := make(map[int]any, len(p))
	for k, v := range p {
		switch v := v.(type) {
		case string:
			out[k] = strings.Clone(v)
		case []byte:
			out[k] = slices.Clone(v)
		default:
			out[k] = v
		}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func oneCount(m map[int]int64, id int) map[int]int64 {
	if v, ok := m[id]; ok {
		return map[int]int64{id: v}
	}
	return nil
}

func oneBound(m map[int][]byte, id int) map[int][]byte {
	if v, ok := m[id]; ok {
		return map[int][]byte{id: slices.Clone(v)}
	}
	return nil
}

func (s *slimFile) ContentType() iceberg.ManifestEntryContent { return s.content }
func (s *slimFile) FilePath() string                          { return s.path }
func (s *slimFile) FileFormat() iceberg.FileFormat            { return s.format }
func (s *slimFile) Partition() map[int]any                    { return s.partition }
func (s *slimFile) Count() int64                              { return s.count }
func (s *slimFile) FileSizeBytes() int64                      { return s.size }
func (s *slimFile) ColumnSizes() map[int]int64                { return nil }
func (s *slimFile) ValueCounts() map[int]int64                { return s.valueCounts }
func (s *slimFile) NullValueCounts() map[int]int64            { return s.nullCounts }
func (s *slimFile) NaNValueCounts() map[int]int64             { return s.nanCounts }
func (s *slimFile) DistinctValueCounts() map[int]int64        { return nil }
func (s *slimFile) LowerBoundValues() map[int][]byte          { return s.lowerBounds }
func (s *slimFile) UpperBoundValues() map[int][]byte          { return s.upperBounds }
func (s *slimFile) KeyMetadata() []byte                       { return s.keyMetadata }
func (s *slimFile) SplitOffsets() []int64                     { return s.splitOffsets }
func (s *slimFile) EqualityFieldIDs() []int                   { return s.equalityIDs }
func (s *slimFile) SortOrderID() *int                         { return s.sortOrderID }
func (s *slimFile) SpecID() int32                             { return s.specID }
func (s *slimFile) FirstRowID() *int64                        { return s.firstRowID }
func (s *slimFile) ReferencedDataFile() *string               { return s.referenced }
func (s *slimFile) ContentOffset() *int64                     { return s.contentOffset }
func (s *slimFile) ContentSizeInBytes() *int64                { return s.contentSize }
