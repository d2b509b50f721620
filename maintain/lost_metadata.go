package maintain

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
)

// A catalog commit writes the new metadata file first and then swaps the
// table's pointer from its base to it (the SQL catalog's UPDATE ... WHERE
// metadata_location = base). A commit that loses that race leaves its file
// behind, referenced by nothing. On a streaming table with a writer, a
// maintenance pass and compactions racing, that is a file of the size of
// the whole metadata every few commits; left to the orphan grace period
// (at least MinOrphanGrace) they were most of a table's metadata/ bytes.
//
// Such a file can be removed at once, with no grace period: writers name
// the file of version N+1 after a base of version N ("00042-<uuid>.
// metadata.json", as Java's and iceberg-go's do), and the swap needs the
// base to be current. Once the current version is N+1 or later and the
// file is neither current nor in the metadata log, its base is no longer
// current and can never be again (locations are unique), so its commit has
// failed or will fail: nothing can ever point at it. A file numbered past
// the current version may belong to a commit in flight and is left alone.

// removeLostCommits removes the metadata files of lost commits of tbl (as
// loaded: a later commit only raises the current version, so the rule
// stays safe when tbl is already stale) and returns how many it removed.
func removeLostCommits(ctx context.Context, tbl *table.Table) (int, error) {
	current := tbl.MetadataLocation()
	curVersion, ok := metadataVersion(path.Base(current))
	if !ok {
		// Not named by version: the rule does not apply; the orphan grace
		// period still does.
		return 0, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, fmt.Errorf("file IO: %w", err)
	}
	listable, ok := fsys.(iceio.ListableIO)
	if !ok {
		return 0, nil
	}
	referenced := map[string]bool{pathKey(current): true}
	for e := range tbl.Metadata().PreviousFiles() {
		referenced[pathKey(e.MetadataFile)] = true
	}
	dir := locationDir(current)
	var lost []string
	err = listable.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if pathKey(p) == pathKey(dir) {
				return nil
			}
			return fs.SkipDir
		}
		v, ok := metadataVersion(d.Name())
		if !ok || v > curVersion || referenced[pathKey(p)] {
			return nil
		}
		lost = append(lost, p)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", dir, err)
	}
	return lake.RemoveFiles(ctx, tbl, lost)
}

// locationDir is the directory of a file location, spelled as the
// location spells it: path.Dir would clean s3://bucket/key into
// s3:/bucket/key, which no FileIO lists.
func locationDir(loc string) string {
	i := strings.LastIndexByte(loc, '/')
	if i < 0 {
		return "."
	}
	if i == 0 || strings.HasSuffix(loc[:i], ":/") || strings.HasSuffix(loc[:i], "://") {
		return loc[:i+1] // the root: "/", "file:/", "s3://bucket/" keep their slash
	}
	return loc[:i]
}

// metadataVersion is N of a metadata file named "N-<uuid>.metadata.json"
// (optionally "N-<uuid>.gz.metadata.json").
func metadataVersion(name string) (int64, bool) {
	if !strings.HasSuffix(name, ".metadata.json") {
		return 0, false
	}
	digits, _, ok := strings.Cut(name, "-")
	if !ok || digits == "" {
		return 0, false
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}
