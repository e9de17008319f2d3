package triton

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// retryPolicy bounds the retries of calls that are safe to repeat.
type retryPolicy struct {
	attempts     int
	initial, max time.Duration
}

// retry calls f until it succeeds, fails with a code other than
// UNAVAILABLE, the attempts are spent, or the next wait would pass ctx's
// deadline. It returns f's last error, never ctx's: an unreachable server
// stays UNAVAILABLE. Use it only for calls without side effects.
func (p retryPolicy) retry(ctx context.Context, f func(context.Context) error) error {
	backoff := p.initial
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil || status.Code(err) != codes.Unavailable || attempt >= p.attempts || ctx.Err() != nil {
			return err
		}
		wait := backoff
		if half := int64(backoff / 2); half > 0 {
			wait = backoff/2 + time.Duration(rand.Int64N(half+1))
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		if backoff = 2 * backoff; backoff > p.max {
			backoff = p.max
		}
	}
}

// call runs one side-effect-free RPC under the default deadline, with
// retries, and wraps its error.
func (c *Client) call(ctx context.Context, op string, f func(context.Context) error) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	return c.wrap(op, c.opts.retry.retry(ctx, f))
}
