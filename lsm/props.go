package lsm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/lakegw/lakegw/changelog"
)

// SummaryCompaction marks the snapshot summary of a compaction commit
// ("true"): an operator reading the history sees which commits only
// rewrote files.
const SummaryCompaction = "lakegw.lsm.compaction"

// Table properties that make a table a lakegw LSM table. They travel with
// the table, so any lakegw instance opens it the same way.
const (
	PropLSM         = changelog.PropLSM // "true"
	PropBuckets     = "lakegw.lsm.buckets"
	PropMergeEngine = "lakegw.lsm.merge-engine"
	// PropAggPrefix + column = sum|min|max|count|last_non_null|first_non_null
	// (aggregation engine; unlisted columns are last_non_null).
	PropAggPrefix = "lakegw.lsm.agg."
	// PropSeqGroupPrefix + sequence column = comma-separated columns
	// (partial-update engine): those columns are updated only by a row
	// whose sequence column value is not older than the stored one.
	PropSeqGroupPrefix = "lakegw.lsm.sequence-group."
	// PropPartitions is the topic partition count; always = buckets.
	PropPartitions = changelog.PropPartitions
)

// Merge engine names.
const (
	EngineDeduplicate   = "deduplicate"
	EnginePartialUpdate = "partial-update"
	EngineAggregation   = "aggregation"
	EngineFirstRow      = "first-row"
)

// Aggregate function names of the aggregation engine.
var aggFuncs = []string{"sum", "min", "max", "count", "last_non_null", "first_non_null"}

// spec is what an LSM table's metadata says about its layout: columns,
// key, buckets and merge engine.
type spec struct {
	schema *iceberg.Schema
	kinds  []kind
	// decs[i] is the precision and scale of column i when it is a
	// decimal (zero otherwise).
	decs   []decType
	names  []string
	keyIdx []int // positions of the key columns in a Row
	keyIDs []int
	// hashNames name the key fields in the key JSON a row's bucket is
	// hashed from: their first names, which a rename (by another engine)
	// must not change (changelog.StableKeyNames). Nil: their names now.
	hashNames []string
	buckets   int
	engine    *mergeEngine
}

func parseSpec(schema *iceberg.Schema, props iceberg.Properties) (*spec, error) {
	if !changelog.IsLSMTable(props) {
		return nil, fmt.Errorf("not a lakegw LSM table (table property %s is not true)", PropLSM)
	}
	s := &spec{schema: schema, keyIDs: slices.Clone(schema.IdentifierFieldIDs)}
	if len(s.keyIDs) == 0 {
		return nil, fmt.Errorf("schema %d has no identifier fields (the primary key)", schema.ID)
	}
	for i, f := range schema.Fields() {
		k, err := kindOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		var dec decType
		if dt, ok := f.Type.(iceberg.DecimalType); ok {
			if dec, err = decTypeOf(dt); err != nil {
				return nil, fmt.Errorf("column %s: %w", f.Name, err)
			}
		}
		s.kinds = append(s.kinds, k)
		s.decs = append(s.decs, dec)
		s.names = append(s.names, f.Name)
		if slices.Contains(s.keyIDs, f.ID) {
			s.keyIdx = append(s.keyIdx, i)
		}
	}
	if len(s.keyIdx) != len(s.keyIDs) {
		return nil, fmt.Errorf("primary key fields %v must be top-level columns", s.keyIDs)
	}
	// Key columns in identifier order: the key JSON (and so the bucket)
	// lists them in that order, as changelog/ does.
	slices.SortFunc(s.keyIdx, func(a, b int) int {
		return slices.Index(s.keyIDs, schema.Field(a).ID) - slices.Index(s.keyIDs, schema.Field(b).ID)
	})
	n, err := strconv.Atoi(props[PropBuckets])
	if err != nil || n < 1 || n > 10000 {
		return nil, fmt.Errorf("table property %s=%q: want an integer in [1,10000]", PropBuckets, props[PropBuckets])
	}
	s.buckets = n
	if p := props.Get(PropPartitions, strconv.Itoa(n)); p != strconv.Itoa(n) {
		return nil, fmt.Errorf("table property %s=%s differs from %s=%d: the topic partition is the bucket", PropPartitions, p, PropBuckets, n)
	}
	s.engine, err = parseEngine(s, props)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *spec) column(name string) (int, error) {
	i := slices.Index(s.names, name)
	if i < 0 {
		return -1, fmt.Errorf("no column %q", name)
	}
	return i, nil
}

func (s *spec) isKey(i int) bool { return slices.Contains(s.keyIdx, i) }

// keyOf returns the memcomparable encoding of a row's key; a null key
// column is an error.
func (s *spec) keyOf(r Row) (string, error) {
	var buf []byte
	for _, i := range s.keyIdx {
		if r[i] == nil {
			return "", fmt.Errorf("key column %s is null", s.names[i])
		}
		buf = appendKeyPart(buf, r[i])
	}
	return string(buf), nil
}

// describeKey renders a row's key columns for error messages ("id=5").
func (s *spec) describeKey(r Row) string {
	parts := make([]string, len(s.keyIdx))
	for j, i := range s.keyIdx {
		parts[j] = fmt.Sprintf("%s=%v", s.names[i], r[i])
	}
	return strings.Join(parts, ", ")
}

// rowFromMap converts a column-name map into a Row; unknown columns are
// an error, missing ones null.
func (s *spec) rowFromMap(m map[string]any) (Row, error) {
	r := make(Row, len(s.names))
	for name, v := range m {
		i := slices.Index(s.names, name)
		if i < 0 {
			return nil, fmt.Errorf("no column %q in the table (columns: %s)", name, strings.Join(s.names, ", "))
		}
		c, err := coerce(v, s.kinds[i], s.decs[i])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		r[i] = c
	}
	return r, nil
}

// rowToMap is the inverse of rowFromMap, for callers of Get.
func (s *spec) rowToMap(r Row) map[string]any {
	m := make(map[string]any, len(r))
	for i, v := range r {
		m[s.names[i]] = v
	}
	return m
}
