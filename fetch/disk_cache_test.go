package fetch

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
)

func TestBatchCacheServesFromDiskBeyondMemory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "batches")
	d, err := newDiskCache(dir, 4<<20, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	c := newBatchCache(300 << 10) // memory holds about one batch
	c.disk = d
	batch := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 200<<10) }
	key := func(i int) batchKey { return batchKey{topic: "t", baseOffset: int64(i) * 1000} }
	for i := range 10 {
		c.add(key(i), batch(i), true)
	}
	// 10 x 200 KiB = 2 MiB: all on disk, only the last in memory. Each
	// read appends after what dst holds.
	prefix := []byte("before")
	for i := range 10 {
		got, n, ok := c.appendTo(key(i), prefix, 1<<20)
		if !ok || n != 200<<10 || !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], batch(i)) {
			t.Fatalf("batch %d: found %v, size %d, right bytes %v", i, ok, n, bytes.Equal(got[len(prefix):], batch(i)))
		}
	}
	// A batch larger than the room left is reported, not appended.
	if got, n, ok := c.appendTo(key(3), prefix, 100<<10); !ok || n != 200<<10 || len(got) != len(prefix) {
		t.Fatalf("no room: found %v, size %d, appended %d bytes", ok, n, len(got)-len(prefix))
	}
	// Past the disk budget the oldest segments go, with their files.
	for i := 10; i < 40; i++ {
		c.add(key(i), batch(i), true)
	}
	if d.bytes > 4<<20 {
		t.Fatalf("disk cache holds %d bytes, over its 4 MiB budget", d.bytes)
	}
	if _, _, ok := d.appendTo(key(0), nil, 1<<20); ok {
		t.Fatal("the oldest batch must have been evicted")
	}
	if got, _, ok := d.appendTo(key(39), nil, 1<<20); !ok || !bytes.Equal(got, batch(39)) {
		t.Fatal("the newest batch must be on disk")
	}
	// A batch encoded ahead of a consumer goes to disk only.
	c.add(key(40), batch(40), false)
	if _, inMemory := c.mem.Get(key(40)); inMemory {
		t.Fatal("a batch added for disk only is in the memory tier")
	}
	if got, _, ok := c.appendTo(key(40), nil, 1<<20); !ok || !bytes.Equal(got, batch(40)) {
		t.Fatal("a batch added for disk only must be served from disk")
	}
	files, _ := os.ReadDir(dir)
	if int64(len(files))*d.segBytes > 4<<20+d.segBytes {
		t.Fatalf("%d segment files left for a 4 MiB budget", len(files))
	}
}

func TestDiskCacheWriteErrorDisablesIt(t *testing.T) {
	d, err := newDiskCache(filepath.Join(t.TempDir(), "b"), 4<<20, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	d.add(batchKey{baseOffset: 1}, []byte("one"))
	d.current().f.Close() // as a failing disk would
	d.add(batchKey{baseOffset: 2}, []byte("two"))
	if !d.disabled {
		t.Fatal("a failed write must disable the disk cache")
	}
	if _, _, ok := d.appendTo(batchKey{baseOffset: 1}, nil, 1<<20); ok {
		t.Fatal("a disabled cache serves nothing")
	}
	d.add(batchKey{baseOffset: 3}, []byte("three")) // must not panic
}
