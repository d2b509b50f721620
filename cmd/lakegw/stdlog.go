package main

import (
	"bytes"
	stdlog "log"

	"github.com/rs/zerolog"
)

// iceberg-go reports through the standard library's log package, on
// stderr as bare text: outside the process's structured log, its level and
// its secret scrubbing. routeStdLog sends each such line to log instead.
func routeStdLog(log zerolog.Logger) {
	stdlog.SetFlags(0)
	stdlog.SetPrefix("")
	stdlog.SetOutput(stdLogWriter{log: log.With().Str("source", "go-log").Logger()})
}

// stdLogWriter writes each line of the standard logger as one event.
type stdLogWriter struct{ log zerolog.Logger }

// benignMissingMetadata marks iceberg-go's warning that an old metadata
// file it meant to delete after a commit was gone: on a table with several
// committers (a writer, maintenance, compaction, lakegw's sweep of lost
// commits) another one routinely removed it first. It is no fault, so it
// is logged at debug; any other failure to delete stays a warning.
var (
	benignMissingMetadata = []byte("Failed to delete old metadata file")
	noSuchFile            = []byte("no such file or directory")
)

func (w stdLogWriter) Write(p []byte) (int, error) {
	line := bytes.TrimRight(p, "\n")
	ev := w.log.Warn()
	if bytes.Contains(line, benignMissingMetadata) && bytes.Contains(line, noSuchFile) {
		ev = w.log.Debug()
	}
	ev.Msg(string(line))
	return len(p), nil
}
