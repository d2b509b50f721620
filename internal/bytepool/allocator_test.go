package bytepool

import (
	"bytes"
	"testing"
)

// The allocator hands out zeroed memory, reused or not, and keeps a
// buffer's contents when it grows.
func TestAllocatorZeroesAndKeepsContents(t *testing.T) {
	var a Allocator
	b := a.Allocate(10000)
	for i := range b {
		b[i] = 0xff
	}
	a.Free(b)
	for range 4 { // a recycled array comes back cleared
		c := a.Allocate(9000)
		if len(c) != 9000 || !bytes.Equal(c, make([]byte, 9000)) {
			t.Fatal("Allocate returned memory that is not zeroed")
		}
		a.Free(c)
	}
	d := a.Allocate(100)
	copy(d, "kept")
	d = a.Reallocate(50000, d)
	if len(d) != 50000 || string(d[:4]) != "kept" || !bytes.Equal(d[4:], make([]byte, 50000-4)) {
		t.Fatal("Reallocate must keep the contents and zero the rest")
	}
	d = a.Reallocate(20, d)
	d = a.Reallocate(60, d) // within capacity: the regrown tail is zeroed again
	if string(d[:4]) != "kept" || !bytes.Equal(d[20:], make([]byte, 40)) {
		t.Fatal("Reallocate within capacity must zero what it adds")
	}
}
