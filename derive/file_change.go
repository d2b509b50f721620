package derive

import (
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// fileChange is how a snapshot changed the live rows of one data file, which
// decides how cheaply its removed and added rows can be found.
type fileChange int

const (
	// unchanged: same delete files before and after.
	unchanged fileChange = iota
	// added or removed file, or a mix of delete changes: read the file as
	// it was before and after and diff the rows.
	wholeFile
	// newPositions: only position deletes / deletion vectors changed and no
	// equality deletes apply; the removed rows are read at the newly deleted
	// positions only.
	newPositions
	// newEqualityDeletes: only equality delete files were added; the
	// removed rows are the rows live before that match them.
	newEqualityDeletes
)

func classifyFile(before, after *table.FileScanTask) fileChange {
	if before == nil || after == nil {
		return wholeFile
	}
	posB := paths(before.DeleteFiles, before.DeletionVectorFiles)
	posA := paths(after.DeleteFiles, after.DeletionVectorFiles)
	eqB, eqA := paths(before.EqualityDeleteFiles), paths(after.EqualityDeleteFiles)
	samePos, sameEq := slices.Equal(posB, posA), slices.Equal(eqB, eqA)
	switch {
	case samePos && sameEq:
		return unchanged
	case sameEq && len(eqA) == 0 && after.File.FileFormat() == iceberg.ParquetFile:
		return newPositions
	case samePos && isSubset(eqB, eqA):
		return newEqualityDeletes
	}
	return wholeFile
}

func paths(lists ...[]iceberg.DataFile) []string {
	var out []string
	for _, l := range lists {
		for _, f := range l {
			out = append(out, f.FilePath())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// isSubset reports whether sorted a is contained in sorted b.
func isSubset[T comparable](a, b []T) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// subtractSorted returns the elements of sorted b not in sorted a, and
// whether a is contained in b.
func subtractSorted(a, b []int64) ([]int64, bool) {
	var out []int64
	i := 0
	for _, x := range b {
		for i < len(a) && a[i] < x {
			return nil, false // a holds a value b lacks
		}
		if i < len(a) && a[i] == x {
			i++
			continue
		}
		out = append(out, x)
	}
	return out, i == len(a)
}
