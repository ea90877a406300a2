package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/oneline"
	"github.com/quorumlock/quorumlock/multilock"
)

// optionErr is err, an option's invalid value, named after the option:
// "quorumlock: WithTTL(1ms): ttl 1ms is not larger than ...".
func optionErr(option string, err error) error {
	return oneline.Wrap(errors.New("quorumlock: "+option), err)
}

// Lease is one held acquisition. Its methods are safe for concurrent use.
//
// A lease ends by Unlock, or is lost: its watchdog could not renew it on a
// quorum before its validity ended (ErrLeaseLost), or its fixed lease time ran
// out (ErrLeaseExpired). Done and Context tell the critical section to stop.
type Lease struct {
	m        *Mutex
	ml       *multilock.MultiLock
	owner    string
	ttl      time.Duration
	watchdog bool

	mu       sync.Mutex
	unlocked bool
	// closed: Client.Close took the lease over (it set unlocked too); an
	// Unlock after that reports the Close, even while Close is still
	// waiting for a renewal under way and the lease has no cause yet.
	closed bool
	cause  error // why the lease ended; nil while it holds
	ctx    context.Context
	cancel context.CancelCauseFunc
	// due and qi place the lease in its client's dueQueue, which
	// runs the watchdog (renew every ttl/3) or, for a fixed lease time, ends
	// the lease at its validity's end: nothing runs between renewals, and
	// Unlock only takes the lease out of the queue.
	due      time.Time
	qi       int
	renewing sync.WaitGroup
	acquired time.Time // when the lease was obtained, with an observer: for the hold time
	letGone  bool      // counted out of Mutex.holding (letGo), under mu
}

// letGo counts the lease out of its handle's holding, once; under l.mu.
func (l *Lease) letGo() {
	if !l.letGone {
		l.letGone = true
		l.m.holding.Add(-1)
	}
}

// newLease hands out a granted acquisition as a Lease. When the client was
// closed while it was being acquired, the lock is given back at once and
// the error wraps ErrClosed.
func (m *Mutex) newLease(ml *multilock.MultiLock, owner string) (*Lease, error) {
	l := &Lease{m: m, ml: ml, owner: owner, ttl: m.ttl(), watchdog: m.cfg.leaseTime == 0, qi: -1, acquired: m.c.observedNow()}
	if !m.c.track(l) {
		ctx, cancel := context.WithTimeout(context.Background(), m.c.cfg.releaseTimeout)
		defer cancel()
		_, _ = ml.Release(ctx)
		return nil, m.notObtained(ErrClosed)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watchdog {
		m.c.due.schedule(l, l.ttl/3)
	} else {
		m.c.due.schedule(l, time.Until(ml.Until()))
	}
	return l, nil
}

// step is the lease's timed step, run by the client's dueQueue: a watchdog
// renewal, or the end of a fixed lease time.
func (l *Lease) step() {
	if l.watchdog {
		l.renew()
		return
	}
	l.end(ErrLeaseExpired)
}

// end records why the lease ended (the first reason wins) and cancels its
// context if one was handed out.
func (l *Lease) end(cause error) {
	l.mu.Lock()
	if l.cause != nil {
		l.mu.Unlock()
		return
	}
	l.cause = cause
	if l.cancel != nil {
		l.cancel(cause)
	}
	l.letGo()
	l.mu.Unlock()
	l.m.c.untrack(l)
	l.observeEnd(cause)
}

// Until is the end of the lease's validity on the client's monotonic clock:
// ttl − acquisition time − drift allowance after the acquisition ended,
// moved on by every successful renewal.
func (l *Lease) Until() time.Time { return l.ml.Until() }

// Token is the fencing token (0 when the client has WithFencing(false)).
// Tokens strictly increase across successive holders of the same name; they
// are 16-digit numbers (a counter starts at a node's clock in microseconds),
// so store them as 64-bit integers.
func (l *Lease) Token() int64 { return l.ml.Token() }

// name is the lock's name.
func (l *Lease) name() string { return l.m.name() }

// Context is cancelled when the lease ends; context.Cause tells why
// (ErrUnlocked, for a Term ErrResigned; ErrLeaseLost, ErrLeaseExpired, or ErrClosed when the
// client's Close ended it). Run the critical section
// under it so it stops when the lock is no longer held.
func (l *Lease) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(context.Background())
		if l.cause != nil {
			l.cancel(l.cause)
		}
	}
	return l.ctx
}

// Done is closed when the lease ends: unlocked, lost or expired.
func (l *Lease) Done() <-chan struct{} { return l.Context().Done() }

// Err is nil while the lease holds, else why it ended.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cause
}

// Extend renews the lease to its TTL now, on a quorum, within its current
// validity. It never re-acquires a node that no longer holds it.
func (l *Lease) Extend(ctx context.Context) error {
	if err := l.Err(); err != nil {
		return err
	}
	if _, err := l.observedExtend(ctx, false); err != nil {
		return err
	}
	l.mu.Lock()
	if !l.watchdog && !l.unlocked && l.cause == nil {
		l.m.c.due.schedule(l, time.Until(l.ml.Until()))
	}
	l.mu.Unlock()
	return nil
}

// errUnlockedTwice is a second Unlock's error.
var errUnlockedTwice = fmt.Errorf("%w already: Unlock was called twice", ErrUnlocked)

// Unlock gives the lock back on every node. If ctx is already done, a fresh
// context bounded by the release timeout is used, so a deferred Unlock still
// cleans up. It returns ErrLeaseLost or ErrLeaseExpired when the lease had
// ended before (the critical section may not have been protected), and
// ErrNotHeld when no quorum confirmed the release (nothing to do: the lock
// runs out at its TTL on the nodes that did not release), and an error
// wrapping ErrUnlocked when it was unlocked before (ErrClosed when Close
// ended the lease). A Term's Unlock resigns: ErrResigned stands for
// ErrUnlocked.
func (l *Lease) Unlock(ctx context.Context) error {
	l.mu.Lock()
	if l.unlocked {
		cause, closed := l.cause, l.closed
		l.mu.Unlock()
		switch {
		case errors.Is(cause, ErrClosed):
			return cause // Close ended it and released the lock
		case closed && cause != nil:
			return oneline.Join(cause, errClosedLease) // lost first, then Close
		case closed:
			return errClosedLease // Close is ending it right now
		}
		if l.m.elects() {
			return errResignedTwice
		}
		return errUnlockedTwice
	}
	l.unlocked = true
	l.letGo() // before the release is sent: its messages wake waiters (Mutex.holding)
	l.m.c.due.cancel(l)
	l.mu.Unlock()
	l.renewing.Wait() // a renewal under way finishes first

	ended := l.Err()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), l.m.c.cfg.releaseTimeout)
		defer cancel()
	}
	_, err := l.observedRelease(ctx, ended)
	l.m.c.warnWakeLost()
	if l.m.elects() {
		l.end(ErrResigned) // a term's Unlock resigns
	} else {
		l.end(ErrUnlocked)
	}
	if ended != nil {
		return oneline.Join(ended, err)
	}
	return err
}

// renew is the watchdog's tick, run every ttl/3 (step): it extends the
// lease on a quorum. When an extension fails it tries again (at most every
// ttl/10) until the validity ends; then, or at once when a quorum says the
// lock is no longer ours, the lease is lost. It never re-acquires.
func (l *Lease) renew() {
	l.mu.Lock()
	if l.unlocked || l.cause != nil {
		l.mu.Unlock()
		return
	}
	l.renewing.Add(1)
	l.mu.Unlock()
	defer l.renewing.Done()

	clock := l.m.c.cfg.clock
	until := l.ml.Until()
	if !clock.Now().Before(until) {
		l.end(ErrLeaseLost)
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), until)
	_, err := l.observedExtend(ctx, true)
	cancel()
	next := l.ttl / 3
	switch {
	case err == nil:
	case errors.Is(err, multilock.ErrLost), errors.Is(err, multilock.ErrExpired):
		l.end(oneline.Wrap(ErrLeaseLost, err))
		return
	default:
		left := l.ml.Until().Sub(clock.Now())
		if left <= 0 {
			l.end(oneline.Wrap(ErrLeaseLost, err))
			return
		}
		next = min(max(l.ttl/10, time.Millisecond), left)
	}
	l.mu.Lock()
	if !l.unlocked {
		l.m.c.due.schedule(l, next)
	}
	l.mu.Unlock()
}
