package lake

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAbsLocationResolvesOnlyRelativeLocalPaths(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"metadata/00125-a.metadata.json": filepath.Join(wd, "metadata/00125-a.metadata.json"),
		"./copy":                         filepath.Join(wd, "copy"),
		"/abs/v1.json":                   "/abs/v1.json",
		"s3://bucket/t/v1.json":          "s3://bucket/t/v1.json",
		"file:///abs/v1.json":            "file:///abs/v1.json",
		"file:/abs/v1.json":              "file:/abs/v1.json",
		"gs://b/x":                       "gs://b/x",
	}
	for in, want := range cases {
		if got, err := AbsLocation(in); err != nil || got != want {
			t.Errorf("AbsLocation(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	r, err := Remap{From: "s3://b/t", To: "copy/t"}.Absolute()
	if err != nil || r.From != "s3://b/t" || r.To != filepath.Join(wd, "copy/t") {
		t.Errorf("Remap.Absolute = %+v, %v; want the target resolved against %s", r, err, wd)
	}
}
