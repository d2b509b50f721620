package bytepool

import "testing"

func TestGetHasRoomAndPutRecycles(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 1 << 20, 3<<20 + 1, 1 << 26} {
		b := Get(n)
		if len(b) != 0 || cap(b) < n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(b), cap(b))
		}
		b = append(b, make([]byte, n)...)
		Put(b)
	}
	// An array larger than its class is reused at the class below.
	odd := make([]byte, 0, 5000)
	Put(odd)
	if b := Get(4096); cap(b) < 4096 {
		t.Fatalf("cap %d", cap(b))
	}
	// Beyond the largest class nothing is pooled, and Get still serves.
	if b := Get(1<<26 + 1); cap(b) < 1<<26+1 {
		t.Fatalf("cap %d", cap(b))
	}
}

func TestSteadyStateGetPutDoesNotAllocate(t *testing.T) {
	Put(Get(1 << 20))
	allocs := testing.AllocsPerRun(100, func() {
		b := Get(1 << 20)
		b = append(b, 1, 2, 3)
		Put(b)
	})
	// A GC may empty the pool between runs; most rounds must reuse.
	if allocs > 0.1 {
		t.Fatalf("%.2f allocations per Get/Put", allocs)
	}
}
