package maintain_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// TestMalformedRetentionFailsThePass checks that a retention property that
// is not a whole number in range stops the pass with an error naming it,
// and expires nothing: falling back to a default would drop history the
// table's owner meant to keep (a typo in min-snapshots-to-keep, a unit
// suffix on max-pin).
func TestMalformedRetentionFailsThePass(t *testing.T) {
	ctx := context.Background()
	good := map[string]string{table.MinSnapshotsToKeepKey: "10", table.MaxSnapshotAgeMsKey: "1",
		changelog.PropMaxPinMs: "1000", changelog.PropMaxPinSnapshots: "5", maintain.PropOrphanOlderThan: "600000"}
	for _, bad := range []iceberg.Properties{
		{table.MinSnapshotsToKeepKey: "ten"},
		{table.MaxSnapshotAgeMsKey: "-5"},
		{changelog.PropMaxPinMs: "1d"},
		{changelog.PropMaxPinSnapshots: "0"},
		{maintain.PropOrphanOlderThan: "soon"},
	} {
		var key string
		for k := range bad {
			key = k
		}
		t.Run(key, func(t *testing.T) {
			cat, _, _ := agedDemo(t, 15)
			ident := quickstart.DefaultTable()
			setProps(t, cat, ident, bad)
			before := len(loadTable(t, cat, ident).Metadata().Snapshots())
			_, err := maintain.Run(ctx, cat, ident, maintain.Options{})
			if err == nil || !strings.Contains(err.Error(), key) {
				t.Fatalf("pass with %v: error %v, want one naming %s", bad, err, key)
			}
			if after := len(loadTable(t, cat, ident).Metadata().Snapshots()); after != before {
				t.Fatalf("pass with %v went from %d snapshots to %d", bad, before, after)
			}
			// Once corrected, the same pass expires.
			setProps(t, cat, ident, iceberg.Properties{key: good[key]})
			if _, err := maintain.Run(ctx, cat, ident, maintain.Options{}); err != nil {
				t.Fatalf("pass with %s=%s: %v", key, good[key], err)
			}
			if after := len(loadTable(t, cat, ident).Metadata().Snapshots()); after >= before {
				t.Fatalf("corrected pass kept %d of %d snapshots", after, before)
			}
		})
	}
}
