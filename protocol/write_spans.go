package protocol

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/lakegw/lakegw/fetch"
)

// fileError is a failure to read a span's file, as opposed to one to write
// to the connection.
type fileError struct{ err error }

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// writeSpans writes a frame's spans in order: runs of bytes with one
// writev each, file ranges with sendfile.
func writeSpans(nc net.Conn, spans []fetch.Span) error {
	var bufs net.Buffers
	for _, s := range spans {
		f, off, n := s.File()
		if f == nil {
			if s.Len() > 0 {
				bufs = append(bufs, s.Bytes())
			}
			continue
		}
		if len(bufs) > 0 {
			if _, err := bufs.WriteTo(nc); err != nil {
				return err
			}
			bufs = nil
		}
		if err := sendFile(nc, f, off, n); err != nil {
			return err
		}
	}
	if len(bufs) > 0 {
		_, err := bufs.WriteTo(nc)
		return err
	}
	return nil
}

// sendFile writes n bytes of f from off to nc: with sendfile(2) when nc is
// a socket, so the bytes go from the page cache to the socket without
// passing through the process, else by reading and writing them.
func sendFile(nc net.Conn, f *os.File, off int64, n int) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return copyRange(nc, f, off, n)
	}
	dst, err := sc.SyscallConn()
	if err != nil {
		return copyRange(nc, f, off, n)
	}
	src, err := f.SyscallConn()
	if err != nil {
		return copyRange(nc, f, off, n)
	}
	var sendErr error
	sent := false
	ctlErr := src.Control(func(srcFD uintptr) {
		// The socket is non-blocking: Write parks the goroutine in the
		// poller while it is full (the callback returns false), then
		// calls it again.
		writeErr := dst.Write(func(dstFD uintptr) bool {
			for n > 0 {
				m, err := syscall.Sendfile(int(dstFD), int(srcFD), &off, n)
				if m > 0 {
					n -= m
					sent = true
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false
				case errors.Is(err, syscall.EINTR):
					continue
				case errors.Is(err, syscall.EIO):
					sendErr = &fileError{fmt.Errorf("sendfile %s: %w", f.Name(), err)}
					return true
				case err != nil:
					sendErr = fmt.Errorf("sendfile %s: %w", f.Name(), err)
					return true
				case m == 0:
					sendErr = &fileError{fmt.Errorf("sendfile %s at %d: %w", f.Name(), off, io.ErrUnexpectedEOF)}
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = writeErr
		}
	})
	if ctlErr != nil {
		return fmt.Errorf("sendfile %s: %w", f.Name(), ctlErr)
	}
	if sendErr != nil && !sent && sendfileUnsupported(sendErr) {
		// A file system or socket that sendfile does not serve: nothing
		// went out yet, so copy instead, as Go's own sendfile does.
		return copyRange(nc, f, off, n)
	}
	return sendErr
}

func sendfileUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOTSUP)
}

// copyRange is sendFile for connections without a socket (in-process
// pipes in tests).
func copyRange(w io.Writer, f *os.File, off int64, n int) error {
	src := &fileReader{r: io.NewSectionReader(f, off, int64(n))}
	m, err := io.Copy(w, src)
	if err == nil && m < int64(n) {
		src.err, err = io.ErrUnexpectedEOF, io.ErrUnexpectedEOF
	}
	if err != nil {
		err = fmt.Errorf("copy %d bytes of %s at %d: %w", n, f.Name(), off, err)
		if src.err != nil {
			return &fileError{err}
		}
	}
	return err
}

// fileReader remembers its reader's error, to tell it from the writer's.
type fileReader struct {
	r   io.Reader
	err error
}

func (f *fileReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF {
		f.err = err
	}
	return n, err
}
