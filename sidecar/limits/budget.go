package limits

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Budget bounds the memory of the inference request bodies the sidecar
// holds at once (limits.max_inflight_bytes), over both protocols. A
// request reserves its bytes as it reads them and releases them when it is
// done; a reservation that does not fit is refused, and the request
// answered 429 / RESOURCE_EXHAUSTED (413 when it could never fit).
//
// An eighth more than the limit is kept for small requests (at most a
// 64th of the limit each), so that a few large bodies cannot take every
// byte from ordinary traffic. It is safe for concurrent use.
type Budget struct {
	mu    sync.Mutex
	limit int64
	held  int64
	peak  int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// SetLimit changes the limit (a reload); reservations already held stay.
func (b *Budget) SetLimit(limit int64) {
	b.mu.Lock()
	b.limit = limit
	b.mu.Unlock()
}

// Limit returns the limit.
func (b *Budget) Limit() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit
}

// Held returns the bytes reserved now, and the most ever reserved.
func (b *Budget) Held() (held, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.peak
}

// Reservation is what one request holds of a Budget. Its zero value holds
// nothing; a nil *Budget reserves without bound.
type Reservation struct {
	b *Budget
	n int64
}

// Reserve returns a reservation of n bytes on b, or a *BudgetError when
// they do not fit.
func (b *Budget) Reserve(n int64) (*Reservation, error) {
	r := &Reservation{b: b}
	if err := r.Grow(n); err != nil {
		return nil, err
	}
	return r, nil
}

// Grow adds n bytes to the reservation, or fails with a *BudgetError and
// leaves it as it was. A request of at most a 64th of the limit in all
// may use the eighth kept for small requests.
func (r *Reservation) Grow(n int64) error {
	b := r.b
	if b == nil || n <= 0 {
		r.n += max(n, 0)
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	total := r.n + n
	if total > b.limit {
		return &BudgetError{Limit: b.limit, Never: true}
	}
	room := b.limit
	if total <= b.limit/64 {
		room += b.limit / 8
	}
	if b.held+n > room {
		return &BudgetError{Limit: b.limit}
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	r.n = total
	return nil
}

// Release gives the reservation's bytes back; it may be called more than
// once, and on a nil reservation.
func (r *Reservation) Release() {
	if r == nil || r.b == nil || r.n == 0 {
		return
	}
	r.b.mu.Lock()
	r.b.held -= r.n
	r.b.mu.Unlock()
	r.n = 0
}

// BudgetError refuses a request whose body does not fit the budget:
// Never when it is larger than the whole budget (HTTP 413), otherwise for
// now (HTTP 429, with Retry-After).
type BudgetError struct {
	Limit int64
	Never bool
}

// Error says why the request was refused.
func (e *BudgetError) Error() string {
	if e.Never {
		return fmt.Sprintf("request body larger than limits.max_inflight_bytes (%d bytes)", e.Limit)
	}
	return fmt.Sprintf("request bodies held at once would exceed limits.max_inflight_bytes (%d bytes): try again later", e.Limit)
}

// BudgetStatus is the gRPC status of a request whose body does not fit
// limits.max_inflight_bytes.
func BudgetStatus(err *BudgetError) error {
	return status.Error(codes.ResourceExhausted, "sidecar: "+err.Error())
}
