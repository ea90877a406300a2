package quorum

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/quorumlock/quorumlock/internal/oneline"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// observers calls several observers in order.
type observers []observe.Observer

func (os observers) Observe(ctx context.Context, e observe.Event) {
	for _, o := range os {
		o.Observe(ctx, e)
	}
}

func addObserver(cur, o observe.Observer) observe.Observer {
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

// WithObserver adds an observer of every lock operation (see
// observe.Observer).
// Several may be added; they are called in order. Default none: without an
// observer or a logger the hooks cost one nil check and allocate nothing.
func WithObserver(o observe.Observer) Option {
	return func(c *config) { c.onlyClient("WithObserver"); c.observer = addObserver(c.observer, o) }
}

// WithLogger logs lock operations to l: attempts, acquisitions, renewals
// and releases at Debug, failed renewals and releases at Warn, lost leases
// at Error. Default none (silent); a nil l logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		c.onlyClient("WithLogger")
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
	e := observe.Event{Op: observe.OpAttempt, Name: m.name(), Start: start, Duration: time.Since(start), Err: err, Token: token}
	outs := ml.Outcomes()
	e.Votes = make([]observe.Vote, len(outs))
	for i, x := range outs {
		e.Votes[i] = observe.Vote{Node: x.Node, Granted: x.Granted, Answered: x.Answered, RTT: x.RTT, Err: x.Err}
		if x.Answered && !x.Granted && x.Err == nil {
			e.Contended = true
		}
	}
	switch {
	case err == nil:
		e.Outcome = observe.OutcomeOK
	case e.Contended:
		e.Outcome = observe.OutcomeContended
	default:
		// Including the attempt's own deadline; a caller's cancellation
		// shows in the observe.OpAcquire event.
		e.Outcome = observe.OutcomeFailed
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
	e := observe.Event{Op: observe.OpAcquire, Name: m.name(), Start: start, Duration: time.Since(start), Err: *err}
	if *lease != nil {
		e.Token = (*lease).Token()
	}
	switch {
	case *err == nil:
		e.Outcome = observe.OutcomeOK
	case ctx.Err() != nil:
		e.Outcome = observe.OutcomeCancelled
	case errors.Is(*err, multilock.ErrTaken):
		e.Outcome = observe.OutcomeContended
	default:
		e.Outcome = observe.OutcomeFailed
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
	e := observe.Event{Op: observe.OpExtend, Name: l.name(), Start: start, Duration: time.Since(start), Err: err, Token: l.Token(), Watchdog: watchdog}
	switch {
	case err == nil:
		e.Outcome = observe.OutcomeOK
	case errors.Is(err, multilock.ErrLost), errors.Is(err, multilock.ErrExpired):
		e.Outcome = observe.OutcomeLost
	default:
		e.Outcome = observe.OutcomeFailed
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
	e := observe.Event{Op: observe.OpRelease, Name: l.name(), Start: start, Duration: time.Since(start), Err: oneline.Join(ended, err), Token: l.Token(), Held: start.Sub(l.acquired)}
	switch {
	case errors.Is(ended, ErrLeaseExpired):
		e.Outcome = observe.OutcomeExpired
	case ended != nil:
		e.Outcome = observe.OutcomeLost
	case err != nil:
		e.Outcome = observe.OutcomeFailed
	default:
		e.Outcome = observe.OutcomeOK
	}
	o.Observe(ctx, e)
	return ok, err
}

// observeEnd tells the observer that the lease ended without Unlock. It is
// called once, with the lease's mutex not held.
func (l *Lease) observeEnd(cause error) {
	o := l.m.c.cfg.observer
	if o == nil || errors.Is(cause, ErrUnlocked) || errors.Is(cause, ErrResigned) || errors.Is(cause, ErrClosed) {
		return // an end the holder asked for: its release is observed
	}
	now := time.Now()
	e := observe.Event{Op: observe.OpLost, Name: l.name(), Outcome: observe.OutcomeLost, Start: now, Err: cause, Token: l.Token(), Held: now.Sub(l.acquired)}
	if errors.Is(cause, ErrLeaseExpired) {
		e.Outcome = observe.OutcomeExpired
	}
	o.Observe(context.Background(), e)
}

// logObserver logs events with log/slog.
type logObserver struct{ l *slog.Logger }

func (lo logObserver) Observe(ctx context.Context, e observe.Event) {
	level := slog.LevelDebug
	msg := "quorumlock: " + string(e.Op)
	switch {
	case e.Op == observe.OpLost && e.Outcome == observe.OutcomeLost:
		level, msg = slog.LevelError, "quorumlock: lease lost; the critical section is no longer protected"
	case e.Op == observe.OpLost:
		level, msg = slog.LevelInfo, "quorumlock: lease expired"
	case (e.Op == observe.OpExtend || e.Op == observe.OpRelease) && e.Err != nil:
		level = slog.LevelWarn
		if e.Op == observe.OpExtend {
			msg = "quorumlock: renewal failed"
		}
	case e.Op == observe.OpAcquire && e.Outcome == observe.OutcomeFailed:
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
	if e.Op == observe.OpAttempt {
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
	if e.Op == observe.OpExtend {
		attrs = append(attrs, slog.Bool("watchdog", e.Watchdog))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("err", e.Err))
	}
	lo.l.LogAttrs(ctx, level, msg, attrs...)
}
