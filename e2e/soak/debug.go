package main

import (
	"errors"
	"net"
	"net/http"
	_ "net/http/pprof" // the profiles -debug-listen serves
)

// serveDebug serves the soak process's own profiles (its writers' commits
// run here, not in the gateway) on addr, until the process ends.
func serveDebug(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() {
		// The listener lives as long as the process; a failed Serve only
		// loses the profiles.
		if err := http.Serve(ln, nil); err != nil && !errors.Is(err, net.ErrClosed) {
			logf("debug listener: %v", err)
		}
	}()
	return nil
}
