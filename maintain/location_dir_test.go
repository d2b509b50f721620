package maintain

import "testing"

// The directory of a metadata file is listed as its location spells it,
// on object stores too.
func TestLocationDir(t *testing.T) {
	for loc, want := range map[string]string{
		"s3://lake/wh/ns.db/t/metadata/00001-a.metadata.json": "s3://lake/wh/ns.db/t/metadata",
		"file:///data/wh/t/metadata/00001-a.metadata.json":    "file:///data/wh/t/metadata",
		"/data/wh/t/metadata/00001-a.metadata.json":           "/data/wh/t/metadata",
		"file:///v1.metadata.json":                            "file:///",
		"/v1.metadata.json":                                   "/",
		"v1.metadata.json":                                    ".",
	} {
		if got := locationDir(loc); got != want {
			t.Errorf("locationDir(%q) = %q, want %q", loc, got, want)
		}
	}
}
