package main

import (
	"flag"
	"slices"
	"testing"
)

func TestCheckDebugListenRefusesPublicAddressesUnlessAsked(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:6060", "[::1]:6060", "localhost:6060", "127.0.0.2:0"} {
		if err := checkDebugListen(addr, false); err != nil {
			t.Errorf("%s: %v, want accepted", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:16060", ":6060", "[::]:6060", "10.1.2.3:6060", "myhost:6060"} {
		if err := checkDebugListen(addr, false); err == nil {
			t.Errorf("%s accepted without --debug-listen-public", addr)
		}
		if err := checkDebugListen(addr, true); err != nil {
			t.Errorf("%s with --debug-listen-public: %v", addr, err)
		}
	}
	if err := checkDebugListen("no-port", true); err == nil {
		t.Error("an address without a port was accepted")
	}
}

func TestRedactCmdlineHidesCatalogSecrets(t *testing.T) {
	props := map[string]string{"s3.secret-access-key": "SUPERSECRET1", "uri": "postgres://u:pgpassword@db/x"}
	args := []string{"/bin/lakegw", "serve", "--catalog-prop", "s3.secret-access-key=SUPERSECRET1",
		"-catalog-prop=uri=postgres://u:pgpassword@db/x", "--catalog-prop", "type=sql",
		"--remap-location", "s3://b/key=/data", "--listen", "SUPERSECRET1"}
	got := redactCmdline(args, newScrubber(props))
	want := []string{"/bin/lakegw", "serve", "--catalog-prop", "s3.secret-access-key=[redacted]",
		"-catalog-prop=uri=postgres://u:xxxxx@db/x", "--catalog-prop", "type=sql",
		"--remap-location", "s3://b/key=/data", "--listen", "[redacted]"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// The state store's password stays out of the debug listener's cmdline
// (and the logs), decoded or as typed.
func TestRedactCmdlineHidesTheStatePassword(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	common := addCommonFlags(fs)
	args := []string{"--state", "postgres://gw:p%40ss%2Fw0rd@db:5432/lakegw"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	got := redactCmdline(append([]string{"/bin/lakegw", "serve"}, args...), common.secrets(nil))
	want := []string{"/bin/lakegw", "serve", "--state", "postgres://gw:[redacted]@db:5432/lakegw"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := string(common.secrets(nil).scrub([]byte("auth failed for p@ss/w0rd"))); got != "auth failed for [redacted]" {
		t.Errorf("a log line with the decoded password: %q", got)
	}
}
