package multilock

import (
	"context"
	"time"
)

// Locker is one sub-lock of one acquisition attempt: a lock on one node,
// or another MultiLock. Implementations must be safe to call from several
// goroutines and should return promptly when ctx is done.
type Locker interface {
	// Acquire tries once. granted is true when the sub-lock is now held by
	// this attempt. On refusal (granted false, err nil) remaining is how long
	// the current holder's claim lasts (0 when unknown). fence is the fencing
	// counter reported with a grant (0 when none is kept). An error means
	// the outcome is unknown: the grant may have happened.
	Acquire(ctx context.Context, ttl time.Duration) (granted bool, remaining time.Duration, fence int64, err error)
	// Extend re-arms the sub-lock's TTL only if this attempt still holds it.
	Extend(ctx context.Context, ttl time.Duration) (bool, error)
	// Release gives up what this attempt holds; false when it held nothing.
	Release(ctx context.Context) (bool, error)
}

// Rollbacker is the optional ability of a Locker to give back the share of
// an attempt that never held the lock (it failed the quorum) without telling
// waiters the lock was released: such a message woke the waiters, the
// rolled-back attempt's own among them, to try again while another owner
// still held a quorum. Sub-locks without it are given back with Release.
type Rollbacker interface {
	Rollback(ctx context.Context) (bool, error)
}

// Fencer is the optional ability of a Locker to take a fencing token: store
// it set-if-greater where this attempt's grant still stands.
type Fencer interface {
	Fence(ctx context.Context, token int64) (bool, error)
}

// FenceKeeper is an optional ability of a Fencer: the fencing counter its
// Acquire reports with a grant is already stored on the sub-lock, or less
// than what is stored (the node increments it in place), not just
// computed. When a quorum of grants reported the token itself, Acquire then
// skips the write-back round trip: set-if-greater would change nothing.
type FenceKeeper interface {
	KeepsFence() bool
}

// DeadlineBound is an optional ability of a Locker: its calls return by
// their context's deadline on their own, without waiting for the context to
// be cancelled (a go-redis client with ContextTimeoutEnabled puts the
// deadline on the connection). Calls of such sub-locks get a context that
// carries the deadline but arms no timer; Done is the caller's (or nil), not
// closed at the deadline. A Locker that waits on Done to give up must not
// report true.
type DeadlineBound interface {
	BoundByDeadline() bool
}

// deadlineCtx carries a deadline without a timer, for DeadlineBound calls
// only: Done is the parent's and does not close at dl, and Err reports
// DeadlineExceeded once dl has passed. A timer per call phase was a
// measurable share of an uncontended Lock+Unlock.
type deadlineCtx struct {
	context.Context
	dl time.Time
}

// deadlineOnly returns ctx with deadline d (or ctx's own, if sooner) and
// no timer: Done stays ctx's and does not close at d; Err reports
// context.DeadlineExceeded once d has passed. It is for calls into a
// DeadlineBound sub-lock (or a MultiLock whose BoundByDeadline is true)
// only, which end by the deadline without waiting on Done.
func deadlineOnly(ctx context.Context, d time.Time) context.Context {
	if pd, ok := ctx.Deadline(); ok && !pd.After(d) {
		return ctx
	}
	return &deadlineCtx{Context: ctx, dl: d}
}

// bound is deadlineOnly in c: c becomes ctx with deadline d and is
// returned, unless ctx's own deadline is sooner (then ctx is). c must not
// be in use.
func (c *deadlineCtx) bound(ctx context.Context, d time.Time) context.Context {
	if pd, ok := ctx.Deadline(); ok && !pd.After(d) {
		return ctx
	}
	c.Context, c.dl = ctx, d
	return c
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }

func (c *deadlineCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.dl) {
		return context.DeadlineExceeded
	}
	return nil
}
