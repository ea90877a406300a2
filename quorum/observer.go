package quorum

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/quorumlock/quorumlock/internal/oneline"
	"github.com/quorumlock/quorumlock/multilock"
)

// Op names the lock operation an Event reports; its value is the name
// logs and metrics use.
type Op string

const (
	// OpAttempt: one acquisition attempt on the nodes was decided. TryLock
	// makes one; Lock makes one per try while it waits. Votes and Contended
	// are set.
	OpAttempt Op = "attempt"
	// OpAcquire: Lock or TryLock returned, with a lease or an error.
	// Duration is the whole wait, Token the lease's fencing token.
	OpAcquire Op = "acquire"
	// OpExtend: a renewal of a held lease, by the watchdog (Watchdog true)
	// or by Lease.Extend.
	OpExtend Op = "extend"
	// OpRelease: Unlock gave the lease back. Held is how long the caller
	// held it; Err is what Unlock returned (it wraps ErrLeaseLost or
	// ErrLeaseExpired when the lease had ended before).
	OpRelease Op = "release"
	// OpLost: a lease ended without Unlock: its watchdog could not renew it
	// (Err wraps ErrLeaseLost) or its fixed lease time ran out
	// (ErrLeaseExpired). Held is how long it had been held. It is observed
	// just after the lease's Done channel closes: the holder is told first.
	OpLost Op = "lost"
)

// Outcome labels, short and of low cardinality, for metrics and logs.
const (
	OutcomeOK        = "ok"        // the operation succeeded
	OutcomeContended = "contended" // another owner holds the lock (a node refused)
	OutcomeCancelled = "cancelled" // the caller's context ended first
	OutcomeFailed    = "failed"    // nodes failed or did not answer in time
	OutcomeLost      = "lost"      // the lease is no longer held on a quorum
	OutcomeExpired   = "expired"   // a fixed lease time ran out
)

// Event is the outcome of one lock operation, as an Observer sees it. Which
// fields are set depends on Op.
type Event struct {
	Op Op
	// Name is the lock's name (names joined by "," for a MutexAll).
	Name string
	// Outcome is one of the Outcome… labels.
	Outcome string
	// Start is when the operation began (for OpLost: when the loss was
	// noticed); Duration is how long it took (0 for OpLost).
	Start    time.Time
	Duration time.Duration
	// Err is nil on success, else the operation's error (OpLost: why the
	// lease ended).
	Err error
	// Contended (OpAttempt): at least one node refused because another
	// owner holds the lock.
	Contended bool
	// Votes (OpAttempt): each node's answer, as far as known at the
	// decision (for a MutexAll of several names, one entry per name).
	Votes []Vote
	// Held (OpRelease, OpLost): time since the lease was obtained.
	Held time.Duration
	// Token is the lease's fencing token (0 with WithFencing(false), or when no
	// lease was obtained).
	Token int64
	// Watchdog (OpExtend): the renewal was the watchdog's.
	Watchdog bool
}

// Observer is told the outcome of every lock operation of a Client: each
// acquisition attempt with its per-node votes, each Lock or TryLock with its
// wait, each renewal, release and lost lease. Package otelquorum turns these
// into OpenTelemetry metrics and spans; WithLogger logs them with log/slog.
//
// Observe is called synchronously, after the outcome is known, on the
// goroutine that did the operation (for watchdog renewals and lost leases a
// timer's goroutine, with context.Background). It must be safe for
// concurrent use, must not block, and must not keep e.Votes after it
// returns without copying. ctx is the caller's context where there is one
// (Lock, TryLock, Extend, Unlock), so a tracer can attach spans to it.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// observers calls several observers in order.
type observers []Observer

func (os observers) Observe(ctx context.Context, e Event) {
	for _, o := range os {
		o.Observe(ctx, e)
	}
}

func addObserver(cur, o Observer) Observer {
	switch {
	case o == nil:
		return cur
	case cur == nil:
		return o
	}
	if os, ok := cur.(observers); ok {
		return append(os[:len(os):len(os)], o)
	}
	return observers{cur, o}
}

// WithObserver adds an observer of every lock operation (see Observer).
// Several may be added; they are called in order. Default none: without an
// observer or a logger the hooks cost one nil check and allocate nothing.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observer = addObserver(c.observer, o) }
}

// WithLogger logs lock operations to l: attempts, acquisitions, renewals
// and releases at Debug, failed renewals and releases at Warn, lost leases
// at Error. Default none (silent); a nil l logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.observer = addObserver(c.observer, logObserver{l})
			c.logger = l // for the self-wait warning
		}
	}
}

// observedAcquire runs one acquisition attempt and tells the observer.
func (m *Mutex) observedAcquire(ctx context.Context, ml *multilock.MultiLock) (bool, time.Duration, int64, error) {
	o := m.c.cfg.observer
	if o == nil {
		granted, wait, token, err := ml.Acquire(ctx, m.ttl())
		return granted, wait, token, m.named(err)
	}
	start := time.Now()
	granted, wait, token, err := ml.Acquire(ctx, m.ttl())
	err = m.named(err)
	e := Event{Op: OpAttempt, Name: m.name(), Start: start, Duration: time.Since(start), Err: err, Token: token}
	outs := ml.Outcomes()
	e.Votes = make([]Vote, len(outs))
	for i, x := range outs {
		e.Votes[i] = Vote{Node: x.Node, Granted: x.Granted, Answered: x.Answered, RTT: x.RTT, Err: x.Err}
		if x.Answered && !x.Granted && x.Err == nil {
			e.Contended = true
		}
	}
	switch {
	case err == nil:
		e.Outcome = OutcomeOK
	case e.Contended:
		e.Outcome = OutcomeContended
	default:
		// Including the attempt's own deadline; a caller's cancellation
		// shows in the OpAcquire event.
		e.Outcome = OutcomeFailed
	}
	o.Observe(ctx, e)
	return granted, wait, token, err
}

// observedNow is the time when an observer is set; without one nothing
// reads it, and the clock read is saved on the hot path.
func (c *Client) observedNow() time.Time {
	if c.cfg.observer == nil {
		return time.Time{}
	}
	return time.Now()
}

// observeAcquire tells the observer how Lock or TryLock ended; it is
// deferred with pointers to their results.
func (m *Mutex) observeAcquire(ctx context.Context, start time.Time, lease **Lease, err *error) {
	o := m.c.cfg.observer
	if o == nil {
		return
	}
	e := Event{Op: OpAcquire, Name: m.name(), Start: start, Duration: time.Since(start), Err: *err}
	if *lease != nil {
		e.Token = (*lease).Token()
	}
	switch {
	case *err == nil:
		e.Outcome = OutcomeOK
	case ctx.Err() != nil:
		e.Outcome = OutcomeCancelled
	case errors.Is(*err, multilock.ErrTaken):
		e.Outcome = OutcomeContended
	default:
		e.Outcome = OutcomeFailed
	}
	o.Observe(ctx, e)
}

// observedExtend renews the lease once and tells the observer.
func (l *Lease) observedExtend(ctx context.Context, watchdog bool) (bool, error) {
	o := l.m.c.cfg.observer
	if o == nil {
		return l.mlExtend(ctx)
	}
	start := time.Now()
	ok, err := l.mlExtend(ctx)
	e := Event{Op: OpExtend, Name: l.name(), Start: start, Duration: time.Since(start), Err: err, Token: l.Token(), Watchdog: watchdog}
	switch {
	case err == nil:
		e.Outcome = OutcomeOK
	case errors.Is(err, multilock.ErrLost), errors.Is(err, multilock.ErrExpired):
		e.Outcome = OutcomeLost
	default:
		e.Outcome = OutcomeFailed
	}
	o.Observe(ctx, e)
	return ok, err
}

// observedRelease gives the lock back and tells the observer; ended is why
// the lease had ended before (nil while it held).
func (l *Lease) observedRelease(ctx context.Context, ended error) (bool, error) {
	o := l.m.c.cfg.observer
	if o == nil {
		return l.mlRelease(ctx)
	}
	start := time.Now()
	ok, err := l.mlRelease(ctx)
	e := Event{Op: OpRelease, Name: l.name(), Start: start, Duration: time.Since(start), Err: oneline.Join(ended, err), Token: l.Token(), Held: start.Sub(l.acquired)}
	switch {
	case errors.Is(ended, ErrLeaseExpired):
		e.Outcome = OutcomeExpired
	case ended != nil:
		e.Outcome = OutcomeLost
	case err != nil:
		e.Outcome = OutcomeFailed
	default:
		e.Outcome = OutcomeOK
	}
	o.Observe(ctx, e)
	return ok, err
}

// observeEnd tells the observer that the lease ended without Unlock. It is
// called once, with the lease's mutex not held.
func (l *Lease) observeEnd(cause error) {
	o := l.m.c.cfg.observer
	if o == nil || errors.Is(cause, ErrUnlocked) || errors.Is(cause, ErrClosed) {
		return // an end the holder asked for: its release is observed
	}
	now := time.Now()
	e := Event{Op: OpLost, Name: l.name(), Outcome: OutcomeLost, Start: now, Err: cause, Token: l.Token(), Held: now.Sub(l.acquired)}
	if errors.Is(cause, ErrLeaseExpired) {
		e.Outcome = OutcomeExpired
	}
	o.Observe(context.Background(), e)
}

// logObserver logs events with log/slog.
type logObserver struct{ l *slog.Logger }

func (lo logObserver) Observe(ctx context.Context, e Event) {
	level := slog.LevelDebug
	msg := "quorumlock: " + string(e.Op)
	switch {
	case e.Op == OpLost && e.Outcome == OutcomeLost:
		level, msg = slog.LevelError, "quorumlock: lease lost; the critical section is no longer protected"
	case e.Op == OpLost:
		level, msg = slog.LevelInfo, "quorumlock: lease expired"
	case (e.Op == OpExtend || e.Op == OpRelease) && e.Err != nil:
		level = slog.LevelWarn
		if e.Op == OpExtend {
			msg = "quorumlock: renewal failed"
		}
	case e.Op == OpAcquire && e.Outcome == OutcomeFailed:
		level = slog.LevelWarn
	}
	if !lo.l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("lock", e.Name), slog.String("outcome", e.Outcome))
	if e.Duration > 0 {
		attrs = append(attrs, slog.Duration("took", e.Duration))
	}
	if e.Op == OpAttempt {
		granted := 0
		for _, v := range e.Votes {
			if v.Granted {
				granted++
			}
		}
		attrs = append(attrs, slog.Int("granted", granted), slog.Int("nodes", len(e.Votes)))
	}
	if e.Held > 0 {
		attrs = append(attrs, slog.Duration("held", e.Held))
	}
	if e.Token != 0 {
		attrs = append(attrs, slog.Int64("token", e.Token))
	}
	if e.Op == OpExtend {
		attrs = append(attrs, slog.Bool("watchdog", e.Watchdog))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("err", e.Err))
	}
	lo.l.LogAttrs(ctx, level, msg, attrs...)
}
