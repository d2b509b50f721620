package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// newLogger returns the process's logger on stderr, with the secrets of the
// catalog properties scrubbed from every line, and routes the standard
// library's log package (iceberg-go's warnings) into it.
func newLogger(level, format string, secrets scrubber) (zerolog.Logger, error) {
	log, err := newLoggerTo(os.Stderr, level, format, secrets)
	if err != nil {
		return log, err
	}
	routeStdLog(log)
	return log, nil
}

// newLoggerTo is newLogger writing to f, without touching the standard
// library's log package.
func newLoggerTo(f *os.File, level, format string, secrets scrubber) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("log level %q: %w", level, err)
	}
	out := secrets.writer(f)
	var w io.Writer = out
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: out, TimeFormat: time.RFC3339, NoColor: !colorTerminal(f)}
	default:
		return zerolog.Nop(), fmt.Errorf("log format %q: want json or console", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// colorTerminal reports whether console logs to f may carry ANSI colours:
// only on a terminal, and not when NO_COLOR is set (no-color.org). Logs
// redirected to a file or a pipe (`lakegw serve 2> file`, systemd,
// Kubernetes) are read by people and tools that show escape codes as
// garbage.
func colorTerminal(f *os.File) bool {
	if v, ok := os.LookupEnv("NO_COLOR"); ok && v != "" {
		return false
	}
	// A terminal answers the terminal-attributes ioctl; a file, a pipe
	// or /dev/null (a character device too) does not.
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
