package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tableSpec is what the soak knows of one table: its topic, its key and
// the columns a materialized copy is compared on.
type tableSpec struct {
	topic string
	ident table.Identifier
	key   string
	cols  []string
}

// canonical renders a JSON value (decoded with UseNumber) or an Arrow
// value (see scanTable) the same way.
func canonical(v any) string {
	switch x := v.(type) {
	case nil:
		return "<null>"
	case json.Number:
		return x.String()
	case string:
		return fmt.Sprintf("%q", x)
	default:
		return fmt.Sprint(x)
	}
}

// rowOf renders the compared columns of a row image.
func (s tableSpec) rowOf(img map[string]any) (key, row string, err error) {
	k, ok := img[s.key]
	if !ok || k == nil {
		return "", "", fmt.Errorf("row image without key %s", s.key)
	}
	var b strings.Builder
	for _, c := range s.cols {
		b.WriteString(canonical(img[c]))
		b.WriteByte('|')
	}
	return canonical(k), b.String(), nil
}

// table is a materialized copy of one topic: per partition, the row
// of every live key, built by applying each debezium-json record.
type matTable struct {
	spec  tableSpec
	parts map[int32]map[string]string
	// ops counts the records by debezium op; staleBefore counts updates
	// and deletes whose before-image is not the row the copy holds (a
	// record re-delivered after a truncation, or a skipped change).
	ops         map[string]int
	staleBefore int
}

func newMatTable(spec tableSpec) *matTable {
	return &matTable{spec: spec, parts: map[int32]map[string]string{}, ops: map[string]int{}}
}

// reset forgets a partition: its history is read again from the log start.
func (m *matTable) reset(p int32) { delete(m.parts, p) }

type dbzValue struct {
	Before map[string]any `json:"before"`
	After  map[string]any `json:"after"`
	Op     string         `json:"op"`
}

func (m *matTable) apply(r *kgo.Record) error {
	dec := json.NewDecoder(bytes.NewReader(r.Value))
	dec.UseNumber()
	var v dbzValue
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	m.ops[v.Op]++
	part := m.parts[r.Partition]
	if part == nil {
		part = map[string]string{}
		m.parts[r.Partition] = part
	}
	if v.Before != nil {
		k, row, err := m.spec.rowOf(v.Before)
		if err != nil {
			return fmt.Errorf("%s/%d@%d: before: %w", r.Topic, r.Partition, r.Offset, err)
		}
		if part[k] != row {
			m.staleBefore++
		}
		if v.After == nil {
			delete(part, k)
		}
	}
	if v.After != nil {
		k, row, err := m.spec.rowOf(v.After)
		if err != nil {
			return fmt.Errorf("%s/%d@%d: after: %w", r.Topic, r.Partition, r.Offset, err)
		}
		part[k] = row
	}
	return nil
}

// rows is the union of every partition.
func (m *matTable) rows() map[string]string {
	out := map[string]string{}
	for _, p := range m.parts {
		maps.Copy(out, p)
	}
	return out
}

// diff describes how got differs from want, "" when they are equal.
func diff(want, got map[string]string) string {
	var missing, extra, wrong []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != w:
			wrong = append(wrong, fmt.Sprintf("%s: %s, want %s", k, g, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(wrong) == 0 {
		return ""
	}
	first := func(s []string) []string {
		slices.Sort(s)
		return s[:min(len(s), 3)]
	}
	return fmt.Sprintf("%d rows, want %d: %d missing %v, %d extra %v, %d differ %v",
		len(got), len(want), len(missing), first(missing), len(extra), first(extra), len(wrong), first(wrong))
}
