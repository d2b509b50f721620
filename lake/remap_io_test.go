package lake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
)

func TestApplyRemapsMapsAndConfines(t *testing.T) {
	remaps := []Remap{{From: "s3://bucket/wh/t", To: "/data/copy"}, {From: "/old", To: "file:///new/"}}
	cases := []struct {
		name, want string
		outside    bool
	}{
		{name: "s3://bucket/wh/t/data/a.parquet", want: "/data/copy/data/a.parquet"},
		{name: "s3://bucket/wh/t", want: "/data/copy"},
		{name: "file:///old/m/x.avro", want: "file:///new/m/x.avro"},
		{name: "file:/old/m/./y/../x.avro", want: "file:///new/m/x.avro"},
		// Already under a target: the metadata file named on the command line.
		{name: "/data/copy/metadata/v3.metadata.json", want: "/data/copy/metadata/v3.metadata.json"},
		// Climbing out of the target, or naming a path under no remap.
		{name: "s3://bucket/wh/t/../../../../etc/passwd", outside: true},
		{name: "s3://bucket/wh/t/metadata/../../x", outside: true},
		{name: "/old/../etc/passwd", outside: true},
		{name: "/data/copy/../../etc/passwd", outside: true},
		{name: "/etc/passwd", outside: true},
		{name: "s3://other-bucket/x", outside: true},
		{name: "../../etc/passwd", outside: true},
	}
	for _, c := range cases {
		got, err := applyRemaps(remaps, c.name)
		if c.outside {
			if !errors.Is(err, ErrOutsideRemap) || !strings.Contains(err.Error(), c.name) {
				t.Errorf("%s: got %q, %v; want ErrOutsideRemap naming the path", c.name, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if got, err := applyRemaps(nil, "../../etc/passwd"); err != nil || got != "../../etc/passwd" {
		t.Errorf("no remaps: got %q, %v; want the name unchanged", got, err)
	}
}

// TestRemappedTableCannotReadOutsideItsCopy opens a copied table whose
// metadata names a manifest list that climbs out of the copy, and one at an
// absolute path under no remap. Both point at a file that exists: before
// confinement the first was read (and failed only as a bad manifest list).
func TestRemappedTableCannotReadOutsideItsCopy(t *testing.T) {
	root := t.TempDir()
	copyDir := filepath.Join(root, "copy")
	secret := filepath.Join(root, "outside", "secret")
	for _, dir := range []string{filepath.Join(copyDir, "metadata"), filepath.Dir(secret)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(secret, []byte("not a manifest list"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, manifestList := range []string{"/old/t/metadata/../../../outside/secret", secret} {
		meta := filepath.Join(copyDir, "metadata", "v1.metadata.json")
		if err := os.WriteFile(meta, []byte(testMetadataJSON(manifestList)), 0o600); err != nil {
			t.Fatal(err)
		}
		tbl, err := OpenTableAt(context.Background(), table.Identifier{"ns", "t"}, meta, nil,
			[]Remap{{From: "/old/t", To: copyDir}})
		if err != nil {
			t.Fatalf("open the copied table: %v", err)
		}
		fio, err := tbl.FS(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, err = tbl.CurrentSnapshot().Manifests(fio)
		if !errors.Is(err, ErrOutsideRemap) || !strings.Contains(err.Error(), manifestList) {
			t.Fatalf("manifest list %s: got %v, want ErrOutsideRemap naming it", manifestList, err)
		}
	}
}

// testMetadataJSON is a v2 table metadata file at /old/t with one snapshot
// whose manifest list is manifestList.
func testMetadataJSON(manifestList string) string {
	return fmt.Sprintf(`{"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
 "location": "/old/t", "last-sequence-number": 1, "last-updated-ms": 1, "last-column-id": 1,
 "current-schema-id": 0,
 "schemas": [{"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": true, "type": "long"}]}],
 "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "last-partition-id": 999,
 "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}],
 "properties": {}, "current-snapshot-id": 1,
 "snapshots": [{"snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 1, "manifest-list": %q,
   "summary": {"operation": "append"}, "schema-id": 0}],
 "snapshot-log": [], "metadata-log": []}`, manifestList)
}
