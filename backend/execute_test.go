//go:build cgo

package main

import (
	"errors"
	"testing"
)

// TestResize: the per-request state an execution reuses comes back with the
// batch's length, every element zero (a request's failure must not carry
// over to the request at its place in the next batch), in the same memory
// while it fits.
func TestResize(t *testing.T) {
	s := resize([]error(nil), 3)
	if len(s) != 3 {
		t.Fatalf("resize(nil, 3) has %d elements", len(s))
	}
	s[1] = errors.New("a bad request")
	for _, n := range []int{3, 2, 3, 0, 5} {
		before := cap(s)
		s = resize(s, n)
		if len(s) != n {
			t.Fatalf("resize to %d: %d elements", n, len(s))
		}
		for i, e := range s {
			if e != nil {
				t.Fatalf("resize to %d: element %d kept %v", n, i, e)
			}
		}
		if n <= before && cap(s) != before {
			t.Errorf("resize to %d: new memory (capacity %d → %d) though it fitted", n, before, cap(s))
		}
		for i := range s {
			s[i] = errors.New("the last batch's failure")
		}
	}
}
