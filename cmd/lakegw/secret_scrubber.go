package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/lakegw/lakegw/lake"
)

// scrubber removes the secret values of the catalog properties (see
// lake.SecretValues) from what lakegw writes out. Redacting the properties
// where lakegw itself logs them is not enough: a catalog or storage client
// may quote a credential in an error, and that error is logged.
type scrubber struct {
	olds [][]byte
}

func newScrubber(props map[string]string, extra ...string) scrubber {
	var s scrubber
	for _, v := range append(lake.SecretValues(props), extra...) {
		s.olds = append(s.olds, []byte(v))
		// A JSON log line carries the value escaped.
		if q, err := json.Marshal(v); err == nil && string(q[1:len(q)-1]) != v {
			s.olds = append(s.olds, q[1:len(q)-1])
		}
	}
	return s
}

// scrub returns p with every secret replaced (p itself when it holds none).
func (s scrubber) scrub(p []byte) []byte {
	for _, old := range s.olds {
		if bytes.Contains(p, old) {
			p = bytes.ReplaceAll(p, old, []byte(lake.Redacted))
		}
	}
	return p
}

// writer wraps w; zerolog writes one event per Write, so no secret is split
// across two calls.
func (s scrubber) writer(w io.Writer) io.Writer {
	if len(s.olds) == 0 {
		return w
	}
	return scrubbingWriter{s: s, w: w}
}

// err returns err, or an error of the same text without the secrets when it
// quotes one (main prints it to stderr).
func (s scrubber) err(err error) error {
	if err == nil {
		return nil
	}
	msg := []byte(err.Error())
	if clean := s.scrub(msg); !bytes.Equal(clean, msg) {
		return errors.New(string(clean))
	}
	return err
}

type scrubbingWriter struct {
	s scrubber
	w io.Writer
}

func (sw scrubbingWriter) Write(p []byte) (int, error) {
	if _, err := sw.w.Write(sw.s.scrub(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
