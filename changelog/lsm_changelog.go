package changelog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
)

// The changelog files of lakegw primary-key (LSM) tables. lsm/ writes them at
// every commit, one Parquet file per bucket that has changes; derive.Derive
// serves them instead of deriving changes from data and delete files.
//
// File schema: the op column (_lakegw_op, a string: "+I", "-U", "+U", "-D")
// followed by every top-level column of the table schema the snapshot was
// written with, under the table's field ids. Each row is one full image. An
// update is two consecutive rows, "-U" with the before-image then "+U" with
// the after-image; derive.Derive folds the pair into one OpUpdate record.
// One row per image (rather than before_* and after_* columns side by
// side) keeps the file a plain table row set, readable by any Parquet
// tool, as Paimon's changelog files are. Rows are in key order within a
// file, which is also the order in which they get offsets in the bucket's
// partition.
//
// Where they are: the snapshot summary names a small JSON manifest (under
// the table's metadata/ folder) listing the snapshot's changelog files, and
// carries the record count of every bucket, so an offset index can be built
// from table metadata alone (CountsFromSummary). Changelog files are never
// in Iceberg manifests: Iceberg readers do not see them.
const (
	// PropLSM marks a lakegw primary-key table ("true").
	PropLSM = "lakegw.lsm"
	// SummaryLSMManifest is the snapshot summary key naming the
	// snapshot's changelog manifest.
	SummaryLSMManifest = "lakegw.lsm.changelog-manifest"
	// SummaryLSMCounts is the snapshot summary key with the number of
	// change records per bucket, comma separated ("3,0,5").
	SummaryLSMCounts = "lakegw.lsm.changelog-counts"

	// LSMOpColumn is the op column of a changelog file.
	LSMOpColumn = "_lakegw_op"
	// LSMOpFieldID is its Parquet field id: outside the range table
	// schemas assign (upwards from 1) and below Iceberg's reserved
	// metadata columns (2147483545 and up).
	LSMOpFieldID = 2147480001

	LSMOpInsert       = "+I"
	LSMOpUpdateBefore = "-U"
	LSMOpUpdateAfter  = "+U"
	LSMOpDelete       = "-D"
)

// LSMManifest lists the changelog files of one snapshot of an LSM table.
type LSMManifest struct {
	Version int `json:"version"`
	// Buckets is the table's bucket count (= topic partitions).
	Buckets int `json:"buckets"`
	// Files has one entry per bucket with changes, by bucket.
	Files []LSMFile `json:"files"`
}

// LSMFile is one bucket's changelog file.
type LSMFile struct {
	Bucket int    `json:"bucket"`
	Path   string `json:"path"`
	// Records is the number of change records (an update counts once);
	// Rows the number of file rows (an update has two).
	Records int64 `json:"records"`
	Rows    int64 `json:"rows"`
}

// EncodeLSMManifest renders a manifest as JSON.
func EncodeLSMManifest(m LSMManifest) ([]byte, error) {
	m.Version = 1
	return json.Marshal(m)
}

// DecodeLSMManifest parses and checks a manifest.
func DecodeLSMManifest(data []byte) (LSMManifest, error) {
	var m LSMManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("decode LSM changelog manifest: %w", err)
	}
	if m.Version != 1 {
		return m, fmt.Errorf("LSM changelog manifest version %d: want 1", m.Version)
	}
	if m.Buckets < 1 {
		return m, fmt.Errorf("LSM changelog manifest has %d buckets", m.Buckets)
	}
	for _, f := range m.Files {
		if f.Bucket < 0 || f.Bucket >= m.Buckets || f.Path == "" || f.Records < 0 || f.Rows < f.Records {
			return m, fmt.Errorf("LSM changelog manifest: bad file entry %+v", f)
		}
	}
	return m, nil
}

// ReadLSMManifest reads and checks the changelog manifest at path.
func ReadLSMManifest(fs icebergio.IO, path string) (LSMManifest, error) {
	data, err := lake.ReadFile(fs, path)
	if err != nil {
		return LSMManifest{}, fmt.Errorf("changelog manifest: %w", err)
	}
	m, err := DecodeLSMManifest(data)
	if err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// IsLSMTable reports whether the table properties mark a lakegw LSM table.
func IsLSMTable(props iceberg.Properties) bool { return props[PropLSM] == "true" }

// LSMChangelogArrowSchema is the Arrow schema of a changelog file for a
// table schema: the op column, then the table's columns with field ids.
func LSMChangelogArrowSchema(schema *iceberg.Schema) (*arrow.Schema, error) {
	sc, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema of table schema %d: %w", schema.ID, err)
	}
	fields := make([]arrow.Field, 0, sc.NumFields()+1)
	fields = append(fields, arrow.Field{Name: LSMOpColumn, Type: arrow.BinaryTypes.String,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(LSMOpFieldID)})})
	fields = append(fields, sc.Fields()...)
	return arrow.NewSchema(fields, nil), nil
}

// EncodeLSMCounts renders per-bucket record counts for the summary.
func EncodeLSMCounts(counts []int64) string {
	parts := make([]string, len(counts))
	for i, n := range counts {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, ",")
}

// CountsFromSummary returns the per-partition record counts the writer of
// an LSM table or a raw topic's table recorded in a snapshot's summary, so
// the indexer need not read any file. ok is false when the snapshot is not
// such a snapshot (another table, or a snapshot another writer made): then
// derive. A replace
// snapshot (compaction) has no records. A summary that disagrees with the
// partition count is an error, not a guess.
func CountsFromSummary(props iceberg.Properties, s *table.Snapshot, partitions int32) (counts []int64, ok bool, err error) {
	if !(IsLSMTable(props) || IsRawTable(props) || IsAppendTable(props)) || s == nil || s.Summary == nil {
		return nil, false, nil
	}
	n := max(partitions, 1)
	if s.Summary.Operation == table.OpReplace {
		return make([]int64, n), true, nil
	}
	v, has := s.Summary.Properties[SummaryLSMCounts]
	if !has {
		return nil, false, nil
	}
	counts, err = parsePartitionInts(v, int(n), IsRawTable(props))
	if err != nil {
		return nil, false, fmt.Errorf("snapshot %d: %s (the topic has %d partitions): %w", s.SnapshotID, SummaryLSMCounts, n, err)
	}
	return counts, true, nil
}
