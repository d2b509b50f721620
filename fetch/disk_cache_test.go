package fetch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
	c := newBatchCache(1<<20, 0) // memory holds five batches
	c.disk = d
	batch := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 200<<10) }
	key := func(i int) batchKey { return batchKey{topic: "t", baseOffset: int64(i) * 1000} }
	for i := range 10 {
		c.add(key(i), batch(i), true)
	}
	// 10 x 200 KiB = 2 MiB: all on disk, the last five in memory. Each
	// read appends after what the arena holds.
	prefix := []byte("before")
	for i := range 10 {
		s := batchSink{arena: bytes.Clone(prefix)}
		n, ok := c.appendTo(key(i), &s, 1<<20)
		got := s.arena
		if !ok || n != 200<<10 || !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], batch(i)) {
			t.Fatalf("batch %d: found %v, size %d, right bytes %v", i, ok, n, bytes.Equal(got[len(prefix):], batch(i)))
		}
		bs := s.take()
		flat, err := bs.ReadAll()
		if len(bs) != 1 || err != nil || !bytes.Equal(flat, batch(i)) {
			t.Fatalf("batch %d: %d spans, bytes right: %v, %v", i, len(bs), bytes.Equal(flat, batch(i)), err)
		}
	}
	// A sink that takes files gets disk hits as ranges of the cache's
	// files, memory hits as bytes.
	for i := range 10 {
		spans := &Spans{sink: batchSink{files: true}, disk: d}
		s := &spans.sink
		if n, ok := c.appendTo(key(i), s, 1<<20); !ok || n != 200<<10 {
			t.Fatalf("batch %d: found %v, size %d", i, ok, n)
		}
		bs := s.take()
		f, off, n := bs[0].File()
		inMemory := i >= 5
		if len(bs) != 1 || (f == nil) != inMemory || (bs[0].Bytes() != nil) != inMemory || len(s.arena) != map[bool]int{true: 200 << 10}[inMemory] {
			t.Fatalf("batch %d: spans %d, file %v, bytes %v, arena %d", i, len(bs), f != nil, bs[0].Bytes() != nil, len(s.arena))
		}
		if f != nil {
			got := make([]byte, n)
			if _, err := f.ReadAt(got, off); err != nil || !bytes.Equal(got, batch(i)) {
				t.Fatalf("batch %d: file range %d+%d: %v", i, off, n, err)
			}
		}
		spans.Release()
	}
	// A batch larger than the room left is reported, not appended.
	s := batchSink{arena: bytes.Clone(prefix), files: true}
	if n, ok := c.appendTo(key(3), &s, 100<<10); !ok || n != 200<<10 || len(s.arena) != len(prefix) || len(s.spans) != 0 || len(s.segs) != 0 {
		t.Fatalf("no room: found %v, size %d, appended %d bytes, %d spans", ok, n, len(s.arena)-len(prefix), len(s.spans))
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
	if s := (batchSink{}); !func() bool { _, ok := c.appendTo(key(40), &s, 1<<20); return ok }() || !bytes.Equal(s.arena, batch(40)) {
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

// A response that will send a range of a segment keeps the segment's file
// open, though evicted (and unlinked), until it releases it.
func TestDiskCacheKeepsAReferencedSegmentUntilReleased(t *testing.T) {
	d, err := newDiskCache(filepath.Join(t.TempDir(), "b"), 4<<20, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	batch := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 200<<10) }
	key := func(i int) batchKey { return batchKey{topic: "t", baseOffset: int64(i)} }
	d.add(key(0), batch(0))
	loc, n, ok := d.ref(key(0), 1<<20)
	if !ok || n != 200<<10 {
		t.Fatalf("ref: found %v, size %d", ok, n)
	}
	for i := 1; i < 40; i++ {
		d.add(key(i), batch(i))
	}
	if d.has(key(0)) {
		t.Fatal("the first segment must have been evicted")
	}
	if _, err := os.Stat(loc.seg.f.Name()); !os.IsNotExist(err) {
		t.Fatalf("an evicted segment's file must be unlinked: %v", err)
	}
	got := make([]byte, loc.n)
	if _, err := loc.seg.f.ReadAt(got, loc.off); err != nil || !bytes.Equal(got, batch(0)) {
		t.Fatalf("the referenced range must stay readable after eviction: %v", err)
	}
	loc.seg.unref()
	if _, err := loc.seg.f.ReadAt(got, loc.off); err == nil {
		t.Fatal("the evicted segment's file must be closed once the last reference is released")
	}
	// A batch too large for the room takes no reference.
	d.add(key(100), batch(100))
	loc, _, _ = d.ref(key(100), 10)
	if refs := loc.seg.refs.Load(); refs != 0 {
		t.Fatalf("%d references taken for a batch that did not fit", refs)
	}
}

// A range the spans of a read cannot read disables the disk cache, as a
// failed read in the gateway does: the next fetches encode again rather
// than fail on the same file.
func TestSpansFileFailureDisablesTheDiskCache(t *testing.T) {
	d, err := newDiskCache(filepath.Join(t.TempDir(), "b"), 4<<20, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	k := batchKey{topic: "t"}
	d.add(k, []byte("batch"))
	loc, _, ok := d.ref(k, 1<<20)
	if !ok {
		t.Fatal("batch not cached")
	}
	s := &Spans{sink: batchSink{segs: []*diskSegment{loc.seg}}, disk: d}
	bs := Batches{FileSpan(loc.seg.f, loc.off, loc.n+100)} // past the file's end
	if _, err = bs.ReadAll(); err == nil {
		t.Fatal("a range past the file's end read without an error")
	}
	s.FileFailed(err)
	if d.has(k) {
		t.Fatal("the disk cache must be disabled after a file of it failed")
	}
	s.Release()
}

// Small batches meet the entry bound long before the byte bound: the index
// stays within it, the oldest batches go first, the newest stay readable.
func TestDiskCacheBoundsItsIndexByEntries(t *testing.T) {
	d, err := newDiskCache(filepath.Join(t.TempDir(), "b"), 1<<30, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	d.setMaxEntries(160)
	key := func(i int) batchKey { return batchKey{topic: "t", baseOffset: int64(i)} }
	const n = 1000
	for i := range n {
		if !d.add(key(i), []byte(fmt.Sprintf("batch %d", i))) {
			t.Fatalf("batch %d not kept", i)
		}
		if len(d.index) > 160 {
			t.Fatalf("after %d batches the index holds %d entries, over its bound of 160", i+1, len(d.index))
		}
	}
	if d.has(key(0)) || d.has(key(n-200)) {
		t.Fatal("the oldest batches must have been evicted")
	}
	for i := n - 150; i < n; i++ {
		got, _, ok := d.appendTo(key(i), nil, 1<<20)
		if !ok || string(got) != fmt.Sprintf("batch %d", i) {
			t.Fatalf("batch %d: cached %v, read %q", i, ok, got)
		}
	}
	if len(d.segs) > 17 {
		t.Fatalf("%d segments for 160 entries: a segment must hold at most a sixteenth of the bound", len(d.segs))
	}
}

// Batches that differ only in their topic, encoding or compression are
// told apart; the index and the segments' keys hold no pointer for the
// collector to trace.
func TestDiskCacheIndexNamesBatchesWithoutPointers(t *testing.T) {
	d, err := newDiskCache(filepath.Join(t.TempDir(), "b"), 1<<30, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	keys := []batchKey{
		{topic: "a.t", encoding: "debezium-json", compression: "none", baseOffset: 7},
		{topic: "b.t", encoding: "debezium-json", compression: "none", baseOffset: 7},
		{topic: "a.t", encoding: "canal-json", compression: "none", baseOffset: 7},
		{topic: "a.t", encoding: "debezium-json", compression: "zstd", baseOffset: 7},
	}
	for i, k := range keys {
		if d.has(k) {
			t.Fatalf("key %d cached before it was added", i)
		}
		if !d.add(k, []byte(fmt.Sprint("batch ", i))) {
			t.Fatalf("key %d not kept", i)
		}
	}
	for i, k := range keys {
		if got, _, ok := d.appendTo(k, nil, 1<<20); !ok || string(got) != fmt.Sprint("batch ", i) {
			t.Fatalf("key %d reads %q (%v)", i, got, ok)
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[diskKey](), reflect.TypeFor[diskSlot]()} {
		for i := range typ.NumField() {
			switch typ.Field(i).Type.Kind() {
			case reflect.Int32, reflect.Int64, reflect.Uint32:
			default:
				t.Fatalf("%v.%s is a %v: the index must hold numbers only", typ, typ.Field(i).Name, typ.Field(i).Type)
			}
		}
	}
}
