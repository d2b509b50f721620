package changelog

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func TestLsmCountsFromSummary(t *testing.T) {
	lsmProps := iceberg.Properties{PropLSM: "true"}
	snap := func(op table.Operation, props map[string]string) *table.Snapshot {
		return &table.Snapshot{SnapshotID: 7, Summary: &table.Summary{Operation: op, Properties: props}}
	}
	cases := []struct {
		name   string
		props  iceberg.Properties
		s      *table.Snapshot
		parts  int32
		counts string
		ok     bool
		err    bool
	}{
		{"lsm append", lsmProps, snap(table.OpAppend, map[string]string{SummaryLSMCounts: "3,0,5"}), 3, "[3 0 5]", true, false},
		{"lsm replace", lsmProps, snap(table.OpReplace, nil), 2, "[0 0]", true, false},
		{"foreign snapshot", lsmProps, snap(table.OpAppend, nil), 3, "[]", false, false},
		{"not lsm", iceberg.Properties{}, snap(table.OpAppend, map[string]string{SummaryLSMCounts: "1"}), 1, "[]", false, false},
		{"wrong partition count", lsmProps, snap(table.OpAppend, map[string]string{SummaryLSMCounts: "1,2"}), 3, "[]", false, true},
		{"bad number", lsmProps, snap(table.OpAppend, map[string]string{SummaryLSMCounts: "1,x"}), 2, "[]", false, true},
		{"negative", lsmProps, snap(table.OpAppend, map[string]string{SummaryLSMCounts: "-1"}), 1, "[]", false, true},
	}
	for _, c := range cases {
		counts, ok, err := CountsFromSummary(c.props, c.s, c.parts)
		if (err != nil) != c.err || ok != c.ok || fmt.Sprint(counts) != c.counts {
			t.Errorf("%s: got %v %v %v, want %s %v err=%v", c.name, counts, ok, err, c.counts, c.ok, c.err)
		}
	}
}

func TestLsmManifestDecodeRejectsBadInput(t *testing.T) {
	good := `{"version":1,"buckets":2,"files":[{"bucket":1,"path":"/x","records":2,"rows":3}]}`
	if _, err := DecodeLSMManifest([]byte(good)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		``, `{`, `[]`,
		`{"version":2,"buckets":2,"files":[]}`,
		`{"version":1,"buckets":0,"files":[]}`,
		`{"version":1,"buckets":2,"files":[{"bucket":2,"path":"/x","records":1,"rows":1}]}`,
		`{"version":1,"buckets":2,"files":[{"bucket":0,"path":"","records":1,"rows":1}]}`,
		`{"version":1,"buckets":2,"files":[{"bucket":0,"path":"/x","records":2,"rows":1}]}`,
	} {
		if _, err := DecodeLSMManifest([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	m, err := DecodeLSMManifest([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	body, err := EncodeLSMManifest(m)
	if err != nil || string(body) != good {
		t.Fatalf("round trip: %s %v", body, err)
	}
	if EncodeLSMCounts([]int64{3, 0, 5}) != "3,0,5" {
		t.Fatal("counts encoding")
	}
}
