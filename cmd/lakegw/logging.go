package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// newLogger returns the process's logger on stderr, with the secrets of the
// catalog properties scrubbed from every line, and routes the standard
// library's log package (iceberg-go's warnings) into it.
func newLogger(level, format string, secrets scrubber) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("log level %q: %w", level, err)
	}
	out := secrets.writer(os.Stderr)
	var w io.Writer = out
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: out, TimeFormat: time.RFC3339}
	default:
		return zerolog.Nop(), fmt.Errorf("log format %q: want json or console", format)
	}
	log := zerolog.New(w).Level(lvl).With().Timestamp().Logger()
	routeStdLog(log)
	return log, nil
}
