package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func newTestFlags() (*flag.FlagSet, *string, *time.Duration, *listFlag) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9092", "")
	poll := fs.Duration("poll-interval", 200*time.Millisecond, "")
	var props listFlag
	fs.Var(&props, "catalog-prop", "")
	return fs, listen, poll, &props
}

func TestConfigPrecedenceFlagEnvFileDefault(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lakegw.yaml")
	if err := os.WriteFile(file, []byte("listen: 0.0.0.0:1111\npoll-interval: 1s\ncatalog-prop:\n  type: rest\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	fs, listen, poll, props := newTestFlags()
	if err := parseConfig(fs, []string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	if *listen != "0.0.0.0:1111" || *poll != time.Second || !slices.Equal(*props, listFlag{"type=rest"}) {
		t.Fatalf("from file: %s %s %v", *listen, *poll, *props)
	}

	t.Setenv("LAKEGW_LISTEN", "127.0.0.1:2222")
	t.Setenv("LAKEGW_CATALOG_PROP", "type=sql,uri=x")
	fs, listen, poll, props = newTestFlags()
	if err := parseConfig(fs, []string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	if *listen != "127.0.0.1:2222" || *poll != time.Second || !slices.Equal(*props, listFlag{"type=sql", "uri=x"}) {
		t.Fatalf("env over file: %s %s %v", *listen, *poll, *props)
	}

	t.Setenv("LAKEGW_CONFIG", file)
	fs, listen, poll, _ = newTestFlags()
	if err := parseConfig(fs, []string{"--listen", "127.0.0.1:3333"}); err != nil {
		t.Fatal(err)
	}
	if *listen != "127.0.0.1:3333" || *poll != time.Second {
		t.Fatalf("flag over env, file from LAKEGW_CONFIG: %s %s", *listen, *poll)
	}
}

func TestConfigRejectsUnknownAndBadValues(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(file, []byte("lisen: typo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, _, _, _ := newTestFlags()
	if err := parseConfig(fs, []string{"--config", file}); err == nil {
		t.Fatal("a misspelt setting must be an error, not ignored")
	}
	t.Setenv("LAKEGW_POLL_INTERVAL", "soon")
	fs, _, _, _ = newTestFlags()
	if err := parseConfig(fs, nil); err == nil {
		t.Fatal("a bad duration in the environment must be an error")
	}
}
