package procs

import "net"

// FreeAddr returns a loopback address whose port was free a moment ago, for
// a server the harness is about to start: the server binds it itself, so
// the listener here is closed first (another process could take the port
// in between; on a test machine that is rare enough).
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
