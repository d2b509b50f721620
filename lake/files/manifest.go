package files

import (
	"fmt"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// ManifestEntries returns the entries of manifest m (without the entries
// marked deleted when discardDeleted), naming the manifest in the error.
// It reads them through iceberg-go's streaming Entries (FetchEntries is
// deprecated).
func ManifestEntries(fs icebergio.IO, m iceberg.ManifestFile, discardDeleted bool) ([]iceberg.ManifestEntry, error) {
	var out []iceberg.ManifestEntry
	for e, err := range m.Entries(fs, discardDeleted) {
		if err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
		}
		out = append(out, e)
	}
	return out, nil
}
