package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/apache/iceberg-go/table"
)

// RemoveFiles deletes files through the table's IO and returns how many it
// removed. A file already gone counts as removed by someone else, not as
// an error (a second gateway may run the same pass).
func RemoveFiles(ctx context.Context, tbl *table.Table, files []string) (int, error) {
	if len(files) == 0 {
		return 0, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, fmt.Errorf("file IO: %w", err)
	}
	n := 0
	var errs []error
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		err := fsys.Remove(f)
		switch {
		case err == nil:
			n++
		case errors.Is(err, fs.ErrNotExist):
		default:
			errs = append(errs, fmt.Errorf("remove %s: %w", f, err))
		}
	}
	return n, errors.Join(errs...)
}
