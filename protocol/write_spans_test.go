package protocol

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/lakegw/lakegw/fetch"
)

// writeSpans sends memory and file spans in order, over a TCP socket
// (sendfile) and over an in-process pipe (read and write); the reader on
// the other end is slower than the writer, so the socket fills up and the
// sendfile loop has to wait for it.
func TestWriteSpansSendsEverySpanInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	file := newSpanFile(t)
	var spans []fetch.Span
	var want []byte
	for range 40 {
		b := make([]byte, rng.IntN(256<<10))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		want = append(want, b...)
		spans = append(spans, file.split(t, rng, b)...)
	}
	spans = append(spans, fetch.BytesSpan(nil)) // empty spans are skipped
	for _, kind := range []string{"tcp", "pipe"} {
		t.Run(kind, func(t *testing.T) {
			w, r := connPair(t, kind)
			got := make(chan []byte, 1)
			go func() {
				var buf bytes.Buffer
				chunk := make([]byte, 4<<10)
				for {
					n, err := r.Read(chunk)
					buf.Write(chunk[:n])
					if err != nil {
						break
					}
				}
				got <- buf.Bytes()
			}()
			if err := writeSpans(w, spans); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if g := <-got; !bytes.Equal(g, want) {
				t.Fatalf("received %d bytes, want %d (equal: %v)", len(g), len(want), bytes.Equal(g, want))
			}
		})
	}
}

// A file range past the end of its file is an error, not a short frame,
// and an error of the file's side (which disables the disk cache); a
// connection that fails is not.
func TestWriteSpansReportsAShortFile(t *testing.T) {
	file := newSpanFile(t)
	if _, err := file.f.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"tcp", "pipe"} {
		w, r := connPair(t, kind)
		go io.Copy(io.Discard, r)
		err := writeSpans(w, []fetch.Span{fetch.FileSpan(file.f, 0, 10)})
		var fe *fileError
		if !errors.As(err, &fe) {
			t.Fatalf("%s: 10 bytes of a 3-byte file: error %v, want a file error", kind, err)
		}
		w, _ = connPair(t, kind)
		w.Close()
		err = writeSpans(w, []fetch.Span{fetch.FileSpan(file.f, 0, 3)})
		if err == nil || errors.As(err, &fe) {
			t.Fatalf("%s: writing to a closed connection: error %v, want one of the connection", kind, err)
		}
	}
}

func connPair(t *testing.T, kind string) (w, r net.Conn) {
	if kind == "pipe" {
		w, r = net.Pipe()
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := ln.Accept()
			accepted <- c
		}()
		if w, err = net.Dial("tcp", ln.Addr().String()); err != nil {
			t.Fatal(err)
		}
		if r = <-accepted; r == nil {
			t.Fatal("accept failed")
		}
	}
	t.Cleanup(func() { w.Close(); r.Close() })
	return w, r
}
