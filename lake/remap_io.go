package lake

import (
	"errors"
	"fmt"
	"path"
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

// Absolute returns the remap with a relative local target made absolute
// against the working directory, so that a registration stored by the CLI
// reads the same files from a server started elsewhere. The source side is
// left as written: it is matched against the locations the table's metadata
// records, not opened.
func (r Remap) Absolute() (Remap, error) {
	to, err := AbsLocation(r.To)
	if err != nil {
		return Remap{}, fmt.Errorf("remap %s: %w", r, err)
	}
	return Remap{From: r.From, To: to}, nil
}

// ErrOutsideRemap is the error of a location a remapped table must not read:
// one that climbs out of its target prefix with "..", or lies under no
// remap at all. A remap says where a copied table's files lie now; a
// manifest naming any other path (../../etc/passwd, /etc/passwd) is damage
// or an attack, not a file of the table.
var ErrOutsideRemap = errors.New("location outside the table's remapped prefixes")

// applyRemaps returns the location with the first matching prefix replaced.
// The comparison ignores a file: scheme on either side, so a rule written
// for /old matches file:/old/x and file:///old/x as well. A location that
// already lies under a target (the metadata file named on the command line,
// usually) is kept. Either way the result is confined to the target prefix:
// see ErrOutsideRemap.
func applyRemaps(remaps []Remap, name string) (string, error) {
	if len(remaps) == 0 {
		return name, nil
	}
	bare := stripFileScheme(name)
	for _, r := range remaps {
		if rest, ok := underPrefix(bare, r.From); ok {
			return confineTo(r.To, rest, name)
		}
	}
	for _, r := range remaps {
		if rest, ok := underPrefix(bare, r.To); ok {
			return confineTo(r.To, rest, name)
		}
	}
	return "", fmt.Errorf("%w: %q lies under none of %v", ErrOutsideRemap, name, remaps)
}

// underPrefix returns what follows prefix in bare ("" or "/..."), when bare
// is prefix itself or lies below it.
func underPrefix(bare, prefix string) (string, bool) {
	p := strings.TrimSuffix(stripFileScheme(prefix), "/")
	if bare == p || strings.HasPrefix(bare, p+"/") {
		return bare[len(p):], true
	}
	return "", false
}

// confineTo joins rest below to, refusing a rest that climbs above it.
// Cleaning alone would not do: path.Clean("/../etc") is "/etc", a quiet
// read of another file instead of an error.
func confineTo(to, rest, name string) (string, error) {
	depth := 0
	for _, seg := range strings.Split(rest, "/") {
		switch seg {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return "", fmt.Errorf("%w: %q climbs out of %s", ErrOutsideRemap, name, to)
			}
		default:
			depth++
		}
	}
	if rest == "" {
		return to, nil
	}
	return strings.TrimSuffix(to, "/") + path.Clean(rest), nil
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
	mapped, err := applyRemaps(r.remaps, name)
	if err != nil {
		return nil, err
	}
	return r.inner.Open(mapped)
}

func (r remapIO) Remove(name string) error {
	mapped, err := applyRemaps(r.remaps, name)
	if err != nil {
		return err
	}
	return r.inner.Remove(mapped)
}

// Location returns where name is read from. Tables copied from one
// another record the same locations for different files: whatever keeps
// facts about a file's bytes keys them by this, not by the recorded name.
// A name outside every remap is returned as recorded: Open refuses it.
func (r remapIO) Location(name string) string {
	loc, err := applyRemaps(r.remaps, name)
	if err != nil {
		return name
	}
	return loc
}

// ReadFile keeps the inner IO's fast path (iceberg-go reads metadata files
// through it when present).
func (r remapIO) ReadFile(name string) ([]byte, error) {
	mapped, err := applyRemaps(r.remaps, name)
	if err != nil {
		return nil, err
	}
	return ReadFile(r.inner, mapped)
}
