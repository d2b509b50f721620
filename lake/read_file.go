package lake

import (
	"fmt"
	"io"

	icebergio "github.com/apache/iceberg-go/io"
)

// ReadFile reads a whole file through a table's IO: by the IO's ReadFile
// when it has one (iceberg-go's local and blob IOs), else by Open.
func ReadFile(fs icebergio.IO, name string) ([]byte, error) {
	if rf, ok := fs.(icebergio.ReadFileIO); ok {
		b, err := rf.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		return b, nil
	}
	f, err := fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	b, err := io.ReadAll(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}
