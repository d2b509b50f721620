package sizedlru

import (
	"testing"
	"time"
)

func lenOf(s string) int64 { return int64(len(s)) }

func TestCacheIsBoundedByBytes(t *testing.T) {
	c := New[int, string](10, lenOf)
	c.Add(1, "aaaa")
	c.Add(2, "bbbb")
	c.Get(1) // 2 is now the least recently used
	c.Add(3, "cccc")
	if _, ok := c.Get(2); ok {
		t.Fatal("the least recently used entry must go once the bound is exceeded")
	}
	for _, k := range []int{1, 3} {
		if _, ok := c.Get(k); !ok {
			t.Fatalf("entry %d must stay", k)
		}
	}
	if c.Bytes() != 8 || c.Len() != 2 {
		t.Fatalf("bytes %d, len %d; want 8, 2", c.Bytes(), c.Len())
	}
}

func TestCacheReplacesAValueAndItsSize(t *testing.T) {
	c := New[int, string](10, lenOf)
	c.Add(1, "aaaaaaaa")
	c.Add(1, "a")
	if v, _ := c.Get(1); v != "a" || c.Bytes() != 1 {
		t.Fatalf("value %q, bytes %d; want \"a\", 1", v, c.Bytes())
	}
	c.Remove(1)
	if _, ok := c.Get(1); ok || c.Bytes() != 0 || c.Len() != 0 {
		t.Fatalf("removed entry: found %v, bytes %d, len %d", ok, c.Bytes(), c.Len())
	}
}

func TestCacheKeepsOneValueLargerThanTheBound(t *testing.T) {
	c := New[int, string](10, lenOf)
	c.Add(1, "aaaa")
	c.Add(2, "bbbbbbbbbbbbbbbb")
	if _, ok := c.Get(2); !ok || c.Len() != 1 || c.Bytes() != 16 {
		t.Fatalf("the newest value, larger than the bound, must stay alone: len %d, bytes %d", c.Len(), c.Bytes())
	}
	c.Add(3, "c")
	if _, ok := c.Get(2); ok || c.Bytes() != 1 {
		t.Fatalf("the large value must go when a newer one comes: bytes %d", c.Bytes())
	}
}

// TestCacheDropsIdleEntries checks the idle bound: an entry unused for
// longer goes at the next Add or Get, one read in time stays, and a cache
// without the bound keeps what it holds.
func TestCacheDropsIdleEntries(t *testing.T) {
	clock := time.Unix(1000, 0)
	c := New[int, string](100, lenOf).ExpireIdle(time.Minute)
	c.now = func() time.Time { return clock }
	c.Add(1, "aaaa")
	c.Add(2, "bbbb")
	clock = clock.Add(40 * time.Second)
	if _, ok := c.Get(1); !ok {
		t.Fatal("an entry used 40 s ago is gone with a one-minute idle bound")
	}
	clock = clock.Add(30 * time.Second) // 2 is 70 s idle, 1 is 30 s
	c.Add(3, "cc")
	if _, ok := c.Get(2); ok {
		t.Fatal("an entry idle for 70 s stayed")
	}
	for _, k := range []int{1, 3} {
		if _, ok := c.Get(k); !ok {
			t.Fatalf("entry %d, used in time, is gone", k)
		}
	}
	if c.Bytes() != 6 || c.Len() != 2 {
		t.Fatalf("bytes %d, len %d; want 6, 2", c.Bytes(), c.Len())
	}
	clock = clock.Add(2 * time.Minute)
	c.Add(4, "d")
	if c.Len() != 1 || c.Bytes() != 1 {
		t.Fatalf("after two idle minutes: len %d, bytes %d; want only the new entry", c.Len(), c.Bytes())
	}

	keep := New[int, string](100, lenOf)
	keep.now = func() time.Time { return clock }
	keep.Add(1, "a")
	clock = clock.Add(time.Hour)
	keep.Add(2, "b")
	if _, ok := keep.Get(1); !ok {
		t.Fatal("a cache without an idle bound dropped an entry")
	}
}

// TestCacheGetAllocatesNothing: refreshing an entry's use time on a hit
// reuses its list element (batch reads hit the cache on every fetch).
func TestCacheGetAllocatesNothing(t *testing.T) {
	c := New[int, string](100, lenOf).ExpireIdle(time.Minute)
	c.Add(1, "a")
	if n := testing.AllocsPerRun(100, func() { c.Get(1) }); n != 0 {
		t.Fatalf("Get allocates %v times", n)
	}
}
