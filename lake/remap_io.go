package lake

import (
	"fmt"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
)

// Remap maps a location prefix recorded in a table's metadata to the prefix
// where the files lie now. Tables copied from another machine or bucket keep
// their original locations in metadata, manifest lists and manifests; rewriting
// them is not an option (they may be read-only, or shared), so lakegw maps
// paths at read time instead.
type Remap struct {
	From string
	To   string
}

// ParseRemap parses "OLD=NEW".
func ParseRemap(s string) (Remap, error) {
	from, to, ok := strings.Cut(s, "=")
	if !ok || from == "" || to == "" {
		return Remap{}, fmt.Errorf("remap %q: want OLD=NEW with both sides non-empty", s)
	}
	return Remap{From: from, To: to}, nil
}

func (r Remap) String() string { return r.From + "=" + r.To }

// stripFileScheme turns file:///a, file:/a and /a into /a, and leaves other
// locations (relative paths, s3://...) as they are.
func stripFileScheme(p string) string {
	switch {
	case strings.HasPrefix(p, "file://"):
		return p[len("file://"):]
	case strings.HasPrefix(p, "file:"):
		return p[len("file:"):]
	}
	return p
}

// Apply returns the location with the first matching prefix replaced. The
// comparison ignores a file: scheme on either side, so a rule written for
// /old matches file:/old/x and file:///old/x as well.
func applyRemaps(remaps []Remap, name string) string {
	bare := stripFileScheme(name)
	for _, r := range remaps {
		from := strings.TrimSuffix(stripFileScheme(r.From), "/")
		if bare == from || strings.HasPrefix(bare, from+"/") {
			return strings.TrimSuffix(r.To, "/") + bare[len(from):]
		}
	}
	return name
}

// remapIO wraps an IO and rewrites every name it is given through the remaps.
type remapIO struct {
	inner  icebergio.IO
	remaps []Remap
}

// NewRemapIO returns an IO that maps recorded locations before opening them.
// With no remaps it returns inner unchanged.
func NewRemapIO(inner icebergio.IO, remaps []Remap) icebergio.IO {
	if len(remaps) == 0 {
		return inner
	}
	return remapIO{inner: inner, remaps: remaps}
}

func (r remapIO) Open(name string) (icebergio.File, error) {
	return r.inner.Open(applyRemaps(r.remaps, name))
}

func (r remapIO) Remove(name string) error {
	return r.inner.Remove(applyRemaps(r.remaps, name))
}

// Location returns where name is read from. Tables copied from one
// another record the same locations for different files: whatever keeps
// facts about a file's bytes keys them by this, not by the recorded name.
func (r remapIO) Location(name string) string {
	return applyRemaps(r.remaps, name)
}

// ReadFile keeps the inner IO's fast path (iceberg-go reads metadata files
// through it when present).
func (r remapIO) ReadFile(name string) ([]byte, error) {
	mapped := applyRemaps(r.remaps, name)
	if rf, ok := r.inner.(icebergio.ReadFileIO); ok {
		return rf.ReadFile(mapped)
	}
	f, err := r.inner.Open(mapped)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", mapped, err)
	}
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil {
		return nil, fmt.Errorf("read %s: %w", mapped, err)
	}
	return buf, nil
}
