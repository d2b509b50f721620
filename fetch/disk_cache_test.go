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
		c.add(key(i), batch(i))
	}
	// 10 x 200 KiB = 2 MiB: all on disk, only the last in memory.
	for i := range 10 {
		got, ok := c.get(key(i))
		if !ok || !bytes.Equal(got, batch(i)) {
			t.Fatalf("batch %d: found %v, right bytes %v", i, ok, bytes.Equal(got, batch(i)))
		}
	}
	// Past the disk budget the oldest segments go, with their files.
	for i := 10; i < 40; i++ {
		c.add(key(i), batch(i))
	}
	if d.bytes > 4<<20 {
		t.Fatalf("disk cache holds %d bytes, over its 4 MiB budget", d.bytes)
	}
	if _, ok := d.get(key(0)); ok {
		t.Fatal("the oldest batch must have been evicted")
	}
	if got, ok := d.get(key(39)); !ok || !bytes.Equal(got, batch(39)) {
		t.Fatal("the newest batch must be on disk")
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
	if _, ok := d.get(batchKey{baseOffset: 1}); ok {
		t.Fatal("a disabled cache serves nothing")
	}
	d.add(batchKey{baseOffset: 3}, []byte("three")) // must not panic
}
