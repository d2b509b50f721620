package lsmmodel

import "testing"

func TestApplyIsPartialUpdate(t *testing.T) {
	m := Model{}
	m.Apply(1, "a", int64(2), nil, false)
	m.Apply(1, nil, int64(3), 1.5, false)
	before := m.Clone()
	m.Apply(2, "b", nil, nil, false)
	m.Apply(1, nil, nil, nil, true)
	if got := before[1]; got != [4]any{int64(1), "a", int64(3), 1.5} {
		t.Fatalf("row 1 after two partial updates: %v", got)
	}
	if _, ok := m[1]; ok || len(m) != 1 || m[2] != [4]any{int64(2), "b", nil, nil} {
		t.Fatalf("after a delete and an insert: %v (the clone must not change: %v)", m, before)
	}
}
