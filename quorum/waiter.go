package quorum

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/internal/ctxend"
	"github.com/quorumlock/quorumlock/multilock"
)

// waitKind is what a lock kind does inside the one waiting loop (wait):
// Mutex (and through it RWMutex and Election) and FairMutex each bring
// their try and their wake channel; the loop, the back-off and giving up
// are shared.
type waitKind interface {
	// try makes one attempt; woken says an unlock message prompted it.
	// After a failure, wait is the hint for backoff.next.
	try(ctx context.Context, woken bool) (ml *multilock.MultiLock, wait time.Duration, err error)
	// lease hands out a granted attempt.
	lease(ml *multilock.MultiLock) (*Lease, error)
	// listen, after a failed try that does not end the wait, makes sure
	// the kind hears wake-ups. It returns true when a wake-up may have
	// been sent before the subscription held (so it was not heard): it
	// has waited for the subscription (up to d, the pause the loop would
	// take, or its own bound), and the loop tries again at once.
	listen(ctx context.Context, d time.Duration) (again bool)
	// signal is the channel a wake-up arrives on.
	signal() <-chan struct{}
	// late reports whether a wake-up just heard is to be ignored.
	late() bool
	// end is called once, when the wait ends; won: with a lease.
	end(won bool)
}

// wait is the one waiting loop: try; on a refusal wait for a wake-up, the
// holder's remaining time or a back-off tick; give up when ctx ends or an
// error no retry can fix comes. A cancelled wait reports each node's most
// telling error across the attempts, and ctx's error.
func wait(ctx context.Context, k waitKind, b backoff) (*Lease, error) {
	ml, hint, err := k.try(ctx, false)
	if err == nil {
		k.end(true)
		return k.lease(ml)
	}
	return waitAfter(ctx, k, b, hint, err)
}

// waitAfter is wait after a first refused try (err, with its hint) that a
// lock kind made itself: a Mutex makes its first try before it allocates
// its waiter, as the lock is usually free.
func waitAfter(ctx context.Context, k waitKind, b backoff, hint time.Duration, err error) (*Lease, error) {
	var seen attemptErrs // the best error per node across attempts
	for {
		seen.add(err)
		if stop, err := givesUp(ctx, err); stop {
			k.end(false)
			if ctx.Err() != nil {
				return nil, seen.final(ctx, err)
			}
			return nil, err
		}
		d := b.next(hint)
		woken := false
		if !k.listen(ctx, d) {
			var cerr error
			if woken, cerr = sleep(ctx, k, d); cerr != nil {
				k.end(false)
				return nil, seen.final(ctx, err)
			}
			if woken {
				b.reset()
			}
		}
		var ml *multilock.MultiLock
		if ml, hint, err = k.try(ctx, woken); err == nil {
			k.end(true)
			return k.lease(ml)
		}
	}
}

// sleep waits for a wake-up that is not late, d, or the end of ctx (then
// it returns ctx's error).
func sleep(ctx context.Context, k waitKind, d time.Duration) (woken bool, err error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-k.signal():
			if k.late() {
				// The timer still bounds the wait.
				continue
			}
			woken = true
		case <-t.C:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		// A wake-up or the timer at the instant of ctx's deadline gives up
		// as the deadline does, whichever of them ran first: a try now
		// could only fail, and leave releases to send. The deadline has
		// come, so ctx's own timer cancels it at once; waiting for that
		// means a caller that checks ctx.Err() after Lock failed finds
		// it set.
		if ctxend.Ended(ctx) {
			<-ctx.Done()
			return false, ctx.Err()
		}
		return woken, nil
	}
}

// backoff is how long a waiter waits after a refused try when nothing
// wakes it: at most the jittered retry interval (and max, when set), at
// most the holder's remaining claim when known. After a split vote (some
// nodes granted, too few) it is a short random pause, the Redlock spec's
// desynchronising back-off: a split between contenders resolves on the
// first retry; when it does not, another owner probably keeps a quorum,
// which no retry can take, so the pause doubles with each split in a row,
// up to the bound. A rollback wakes no waiter (multilock.Rollbacker), so
// nothing ends such a pause but a real unlock message, which resets it.
// Each Lock call has its own.
type backoff struct {
	c      *Client
	max    time.Duration // 0: the retry interval alone bounds a pause
	splits int           // failed tries in a row that some nodes granted
}

// bound is the longest pause: the jittered retry interval, at most max.
func (b *backoff) bound() time.Duration {
	d := b.c.jitter(b.c.cfg.retryInterval)
	if b.max > 0 {
		d = min(d, b.max)
	}
	return d
}

// next is the pause after a refused try whose hint is wait: the holders'
// shortest remaining claim (> 0), unknown (0), or a split vote (< 0).
func (b *backoff) next(wait time.Duration) time.Duration {
	d := b.bound()
	switch {
	case wait < 0:
		d = min(b.c.splitBackoff()<<min(b.splits, 10), d)
		b.splits++
	case wait > 0:
		d = min(wait, d)
		b.splits = 0
	default:
		b.splits = 0
	}
	return d
}

// reset starts the split back-off again (an unlock message was heard).
func (b *backoff) reset() { b.splits = 0 }
