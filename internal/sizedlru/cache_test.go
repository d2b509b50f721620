package sizedlru

import "testing"

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
