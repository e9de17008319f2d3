package limits

import (
	"errors"
	"sync"
	"testing"
)

// TestBudget: reservations fit the limit, small ones (at most a 64th of it)
// also the eighth kept for them, none more than the limit; releases give
// the bytes back, once.
func TestBudget(t *testing.T) {
	b := NewBudget(6400)
	big, err := b.Reserve(6000)
	if err != nil {
		t.Fatal(err)
	}
	var be *BudgetError
	if _, err := b.Reserve(500); !errors.As(err, &be) || be.Never {
		t.Fatalf("500 more bytes (not small): %v, want a *BudgetError for now", err)
	}
	var small []*Reservation
	for range 20 { // small ones (100 ≤ 6400/64) fit up to 6400 + 800
		r, err := b.Reserve(100)
		if err != nil {
			break
		}
		small = append(small, r)
	}
	if len(small) != 12 {
		t.Fatalf("%d small reservations of 100 fitted, want 12 (6000 + 1200 = 6400 + 800)", len(small))
	}
	if held, peak := b.Held(); held != 7200 || peak != 7200 {
		t.Errorf("held %d, peak %d, want 7200", held, peak)
	}
	// A small reservation that grows past a 64th loses the eighth.
	if err := small[0].Grow(100); !errors.As(err, &be) {
		t.Errorf("growing a small reservation past a 64th: %v", err)
	}
	if _, err := b.Reserve(6401); !errors.As(err, &be) || !be.Never {
		t.Errorf("more than the limit: %v, want Never", err)
	}
	big.Release()
	big.Release()
	for _, r := range small {
		r.Release()
	}
	if held, _ := b.Held(); held != 0 {
		t.Errorf("held %d after every release", held)
	}
	var none *Reservation
	none.Release()
	var unbounded Reservation
	if err := unbounded.Grow(1 << 40); err != nil {
		t.Errorf("a reservation of no budget: %v", err)
	}
}

// TestBudgetConcurrent: reservations from many goroutines never exceed the
// limit and its eighth, and all come back.
func TestBudgetConcurrent(t *testing.T) {
	b := NewBudget(64 << 10)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				r, err := b.Reserve(int64(1 + (i*j)%4096))
				if err == nil {
					r.Release()
				}
			}
		}()
	}
	wg.Wait()
	if held, peak := b.Held(); held != 0 || peak > 64<<10+8<<10 {
		t.Errorf("held %d, peak %d", held, peak)
	}
}
