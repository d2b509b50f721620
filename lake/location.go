package lake

import (
	"fmt"
	"path/filepath"
	"strings"
)

// AbsLocation returns a local path made absolute against the working
// directory, and any location with a scheme (s3://..., file:/...) unchanged.
// Locations are stored by one process (the CLI) and read by another (the
// server), which need not share a working directory.
func AbsLocation(loc string) (string, error) {
	if hasScheme(loc) || filepath.IsAbs(loc) {
		return loc, nil
	}
	abs, err := filepath.Abs(loc)
	if err != nil {
		return "", fmt.Errorf("location %s: %w", loc, err)
	}
	return abs, nil
}

// hasScheme reports whether loc starts with a URI scheme ("s3:", "file:"):
// a letter, then letters, digits, '+', '-' or '.', then ':'.
func hasScheme(loc string) bool {
	i := strings.IndexByte(loc, ':')
	if i < 1 {
		return false
	}
	for j, c := range loc[:i] {
		isLetter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !isLetter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

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
