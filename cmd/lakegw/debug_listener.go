package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/lake"
)

// checkDebugListen refuses a debug address other hosts can reach unless the
// operator said so with --debug-listen-public: profiles show the process's
// memory and internals, and taking them costs CPU. Only an IP literal on
// loopback or "localhost" counts as local; any other name might resolve to
// an outside address.
func checkDebugListen(addr string, public bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--debug-listen %q: %w", addr, err)
	}
	if public || isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("--debug-listen %s is not a loopback address: profiles expose the process's internals; "+
		"listen on 127.0.0.1, [::1] or localhost, or add --debug-listen-public to serve them to the network", addr)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// runDebugListener serves Go's profiling endpoints (/debug/pprof/) on addr
// until ctx ends. cmdline is what /debug/pprof/cmdline shows in place of the
// raw command line, which may hold credentials (see redactCmdline).
func runDebugListener(ctx context.Context, addr string, cmdline []string, log zerolog.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
		// The format of pprof.Cmdline: arguments separated by NUL.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, strings.Join(cmdline, "\x00"))
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("debug listener on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	defer stop()
	log.Info().Str("listen", ln.Addr().String()).Msg("debug listener serving /debug/pprof/")
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("debug listener: %w", err)
	}
	return nil
}

// redactCmdline returns the command line as it may be shown: the value of
// every --catalog-prop redacted by lake.RedactProp, then any secret value
// left anywhere (a --config path will not hold one, but a typo might) scrubbed.
func redactCmdline(args []string, secrets scrubber) []string {
	out := make([]string, len(args))
	propNext := false
	for i, a := range args {
		switch {
		case propNext:
			a = redactPropArg(a)
			propNext = false
		case isFlag(a, catalogPropFlag):
			flagPart, value, inline := strings.Cut(a, "=")
			if inline {
				a = flagPart + "=" + redactPropArg(value)
			} else {
				propNext = true
			}
		}
		out[i] = string(secrets.scrub([]byte(a)))
	}
	return out
}

// isFlag reports whether arg is -name or --name, alone or with =value.
func isFlag(arg, name string) bool {
	bare := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
	if bare == arg {
		return false
	}
	n, _, _ := strings.Cut(bare, "=")
	return n == name
}

// redactPropArg redacts the value of one KEY=VALUE catalog property.
func redactPropArg(kv string) string {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return kv
	}
	return k + "=" + lake.RedactProp(k, v)
}
