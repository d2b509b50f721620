package maintain

import (
	"slices"
	"testing"
	"time"
)

// Files leave DeferredRemovals oldest first: once their grace has run out,
// or early when more than Max are held.
func TestDeferredRemovalsHoldForTheGraceWithinTheBound(t *testing.T) {
	d := &DeferredRemovals{Grace: time.Minute, Max: 3}
	t0 := time.Unix(1700000000, 0)
	if due := d.hold([]string{"a", "b"}, t0); len(due) != 0 {
		t.Fatalf("due at once: %v", due)
	}
	if due := d.hold([]string{"c"}, t0.Add(30*time.Second)); len(due) != 0 {
		t.Fatalf("due within the grace: %v", due)
	}
	if due := d.hold(nil, t0.Add(time.Minute)); !slices.Equal(due, []string{"a", "b"}) {
		t.Fatalf("due after a minute: %v, want [a b]", due)
	}
	if due := d.hold([]string{"d", "e", "f"}, t0.Add(61*time.Second)); !slices.Equal(due, []string{"c"}) {
		t.Fatalf("past the bound of 3: %v, want [c] pushed out", due)
	}
	if d.Len() != 3 {
		t.Fatalf("%d held, want 3", d.Len())
	}
}
