package multilock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/drift"
)

// Errors. Failures are reported as one of these joined with a *NodeError per
// sub-lock that refused or failed, so errors.Is and errors.As both work.
var (
	// ErrNotObtained: the policy's quorum was not granted.
	ErrNotObtained = errors.New("quorumlock: lock not obtained")
	// ErrRefused: a sub-lock is held by another owner.
	ErrRefused = errors.New("held by another owner")
	// ErrTooSlow: the quorum was granted, but the acquisition took so long
	// that no validity was left (ttl − elapsed − drift ≤ 0).
	ErrTooSlow = errors.New("acquisition outlasted the ttl minus the drift allowance; use a longer ttl or a shorter per-node budget")
	// ErrNotHeld: an extend or release did not find the lock held by us on
	// enough sub-locks.
	ErrNotHeld = errors.New("quorumlock: lock not held on a quorum")
	// ErrLost: more sub-locks than the policy allows answered that this
	// acquisition no longer holds them; no extend can succeed any more.
	ErrLost = errors.New("quorumlock: lock no longer held on a quorum")
	// ErrExpired: the lease's validity ended before the operation completed.
	ErrExpired = errors.New("quorumlock: lease validity ended")
	// ErrNoAnswer: a sub-lock had not answered when the outcome was decided
	// (or the caller's context ended).
	ErrNoAnswer = errors.New("no answer before the decision")
	// ErrFenceNotWritten: the fencing token could not be written back to a
	// quorum, so it cannot be handed out.
	ErrFenceNotWritten = errors.New("fencing token not written back to a quorum")
)

// NodeError is the error of one sub-lock.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return e.Node + ": " + e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// vote is a sub-lock's answer to Acquire.
type vote struct {
	granted   bool
	remaining time.Duration
	fence     int64
}

// Locker is one sub-lock of one acquisition attempt: a lock on one Redis node,
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

// giveBack gives back sub-lock i of an attempt that never held the lock.
func (m *MultiLock) giveBack(ctx context.Context, i int) (bool, error) {
	if r, ok := m.lockers[i].(Rollbacker); ok {
		return r.Rollback(ctx)
	}
	return m.lockers[i].Release(ctx)
}

// Fencer is the optional ability of a Locker to take a fencing token: store
// it set-if-greater where this attempt's grant still stands.
type Fencer interface {
	Fence(ctx context.Context, token int64) (bool, error)
}

// FenceKeeper is an optional ability of a Fencer: the fencing counter its
// Acquire reports with a grant is already stored on the sub-lock (the node
// scripts increment it in place), not just computed. When a quorum of grants
// reported the token itself, Acquire then skips the write-back round trip.
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

// DeadlineOnly returns ctx with deadline d (or ctx's own, if sooner) and
// no timer: Done stays ctx's and does not close at d; Err reports
// context.DeadlineExceeded once d has passed. It is for calls into a
// DeadlineBound sub-lock (or a MultiLock whose BoundByDeadline is true)
// only, which end by the deadline without waiting on Done.
func DeadlineOnly(ctx context.Context, d time.Time) context.Context {
	if pd, ok := ctx.Deadline(); ok && !pd.After(d) {
		return ctx
	}
	return &deadlineCtx{Context: ctx, dl: d}
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

// Outcome records what one sub-lock answered in the latest phase that reached it.
type Outcome struct {
	Node      string
	Answered  bool
	Granted   bool
	Remaining time.Duration
	Fence     int64
	RTT       time.Duration
	Err       error
}

type config struct {
	policy         Policy
	factor         float64
	clock          drift.Clock
	releaseTimeout time.Duration
	fencing        bool
	tracker        Tracker
	workers        *Workers
}

// Option configures a MultiLock.
type Option func(*config)

// WithPolicy sets the policy; default Majority.
func WithPolicy(p Policy) Option { return func(c *config) { c.policy = p } }

// WithDriftFactor sets the clock drift factor; default drift.DefaultFactor (0.01).
func WithDriftFactor(f float64) Option { return func(c *config) { c.factor = f } }

// WithClock sets the monotonic clock; default drift.System.
func WithClock(clk drift.Clock) Option { return func(c *config) { c.clock = clk } }

// WithReleaseTimeout bounds each sub-lock's release, rollback and late clean-up
// call; they run on a fresh context so a cancelled caller still cleans up.
// Default 250 ms.
func WithReleaseTimeout(d time.Duration) Option { return func(c *config) { c.releaseTimeout = d } }

// WithFencing makes Acquire take a fencing token: the highest counter the
// granting sub-locks report, written back set-if-greater on a quorum of them
// before the acquisition counts. Sub-locks must implement Fencer. Default off.
func WithFencing(on bool) Option { return func(c *config) { c.fencing = on } }

// Tracker counts goroutines: Add(1) before one starts, Done when it ends.
// A *sync.WaitGroup is one, for an owner whose Wait never runs while
// acquisitions may still start; an owner that closes while others may
// still call (quorum.Client) needs one that allows Add during Wait.
type Tracker interface {
	Add(delta int)
	Done()
}

// WithTracker counts every goroutine the MultiLock starts in t, including
// calls still running after a decision was made early (they end by their own
// deadline). An owner that must not leave goroutines behind waits on t.
func WithTracker(t Tracker) Option { return func(c *config) { c.tracker = t } }

type state int

const (
	fresh state = iota
	acquiring
	held
	failed
	released
)

// MultiLock is one acquisition over a set of sub-locks: call Acquire once,
// then Extend and Release. It is safe for concurrent use and must not be
// copied.
type MultiLock struct {
	lockers []Locker
	names   []string
	cfg     config
	limit   int
	bound   bool // every sub-lock is DeadlineBound

	mu       sync.Mutex
	state    state
	ttl      time.Duration
	until    time.Time
	token    int64
	outcomes []Outcome
	elapsed  time.Duration
	rel      []uint8 // per sub-lock, from Release on: rel* bits

	// one backs the per-sub-lock slices when there is a single sub-lock.
	one struct {
		names    [1]string
		outcomes [1]Outcome
		rel      [1]uint8
	}
}

// New returns a MultiLock over lockers. It fails for no lockers, a nil
// locker, a policy whose limit is outside [0, n−1], or a bad drift factor.
func New(lockers []Locker, opts ...Option) (*MultiLock, error) {
	cfg := config{policy: Majority, factor: drift.DefaultFactor, clock: drift.System, releaseTimeout: 250 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	n := len(lockers)
	if n == 0 {
		return nil, errors.New("quorumlock: no sub-locks given")
	}
	if cfg.policy == nil || cfg.clock == nil {
		return nil, errors.New("quorumlock: nil policy or clock")
	}
	if l := cfg.policy.FailedLocksLimit(n); l < 0 || l >= n {
		return nil, fmt.Errorf("quorumlock: policy allows %d failures of %d sub-locks; it must be in [0, %d]", l, n, n-1)
	}
	if cfg.factor < 0 || cfg.factor >= 1 {
		return nil, fmt.Errorf("quorumlock: drift factor must be in [0, 1), got %v", cfg.factor)
	}
	if cfg.releaseTimeout <= 0 {
		return nil, fmt.Errorf("quorumlock: release timeout must be positive, got %v", cfg.releaseTimeout)
	}
	m := &MultiLock{lockers: lockers, cfg: cfg, limit: cfg.policy.FailedLocksLimit(n)}
	if n == 1 {
		// One node: no allocations of their own for the per-node slices.
		m.names, m.outcomes = m.one.names[:], m.one.outcomes[:]
	} else {
		m.names = make([]string, n)
		m.outcomes = make([]Outcome, n)
	}
	m.bound = true
	for i, l := range lockers {
		if l == nil {
			return nil, fmt.Errorf("quorumlock: sub-lock %d is nil", i)
		}
		if b, ok := l.(DeadlineBound); !ok || !b.BoundByDeadline() {
			m.bound = false
		}
		if s, ok := l.(fmt.Stringer); ok {
			m.names[i] = s.String()
		} else {
			m.names[i] = fmt.Sprintf("sub-lock %d", i)
		}
		m.outcomes[i].Node = m.names[i]
	}
	return m, nil
}

// BoundByDeadline reports whether every sub-lock is DeadlineBound: a
// MultiLock's calls then end by their deadline too (see DeadlineBound).
func (m *MultiLock) BoundByDeadline() bool { return m.bound }

// answer is one sub-lock's reply in one phase.
type answer struct {
	i    int
	vote vote
	ok   bool
	err  error
	rtt  time.Duration
}

// fanout runs call on the sub-locks in idx all at once, under one deadline
// perNode from now, and hands answers to decide in arrival order until
// decide says the outcome is known or all answered. It returns without
// waiting for the rest: those calls run on until the deadline, and their
// answers go to late (on the calling goroutine of that sub-lock).
//
// Design note: this is errgroup's shape (one goroutine per sub-lock, each
// writing only its own answer, no cancellation of peers on one failure) with
// an early exit that errgroup.Wait cannot give: a quorum is decided by the
// first n−limit answers, and a frozen node must not hold the caller for its
// whole deadline. Stragglers are counted in the tracker so an owner can wait.
//
// All calls of a phase start together, so they share one deadline context
// (cancelled when the last call returns) instead of a context and a timer
// each: perNode from now, or the caller's deadline if sooner. When every
// sub-lock is DeadlineBound that context arms no timer at all. Cancelling the
// caller's context (the decision was made, or the caller gave up) does not
// cut calls off halfway: a straggler runs to that deadline, so a grant in
// flight is answered and accounted for (kept, or given back if the attempt
// failed or was released), and the client keeps its connection instead of
// dropping one per abandoned call.
func (m *MultiLock) fanout(ctx context.Context, idx []int, perNode time.Duration,
	call func(ctx context.Context, i int) (vote, bool, error),
	decide func(a answer) bool, late func(a answer)) {
	dl := time.Now().Add(perNode)
	d, hasDeadline := ctx.Deadline()
	if hasDeadline && d.Before(dl) {
		dl = d
	}
	answerOf := func(i int, v vote, ok bool, err error, rtt time.Duration) answer {
		if err != nil {
			err = &NodeError{Node: m.names[i], Err: err}
		}
		return answer{i: i, vote: v, ok: ok, err: err, rtt: rtt}
	}
	if len(idx) == 1 {
		// Nothing to overlap with: the call runs inline, so the caller's
		// own context (cancellation included) bounds it; no goroutine.
		i := idx[0]
		pctx, cancel := ctx, context.CancelFunc(nil)
		switch {
		case m.bound:
			pctx = DeadlineOnly(ctx, dl)
		case !hasDeadline || d.After(dl):
			pctx, cancel = context.WithDeadline(ctx, dl)
		}
		t0 := m.cfg.clock.Now()
		v, ok, err := call(pctx, i)
		rtt := m.cfg.clock.Now().Sub(t0)
		if cancel != nil {
			cancel()
		}
		decide(answerOf(i, v, ok, err, rtt))
		return
	}
	var (
		pctx   context.Context
		cancel context.CancelFunc
		left   atomic.Int32
	)
	if m.bound {
		pctx = DeadlineOnly(context.WithoutCancel(ctx), dl)
	} else {
		pctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), dl)
	}
	left.Store(int32(len(idx)))
	one := func(i int) answer {
		t0 := m.cfg.clock.Now()
		v, ok, err := call(pctx, i)
		rtt := m.cfg.clock.Now().Sub(t0)
		if left.Add(-1) == 0 && cancel != nil {
			cancel()
		}
		return answerOf(i, v, ok, err, rtt)
	}
	var (
		mu   sync.Mutex
		open = true
		ch   = make(chan answer, len(idx))
	)
	for _, i := range idx {
		if m.cfg.tracker != nil {
			m.cfg.tracker.Add(1)
		}
		m.spawn(func() {
			if m.cfg.tracker != nil {
				defer m.cfg.tracker.Done()
			}
			a := one(i)
			mu.Lock()
			if open {
				ch <- a // buffered for every sub-lock: never blocks
				mu.Unlock()
				return
			}
			mu.Unlock()
			late(a)
		})
	}
	for range idx {
		var a answer
		select {
		case a = <-ch:
		case <-ctx.Done():
			// The caller gave up; calls that ignore cancellation finish late.
			goto closed
		}
		if decide(a) {
			break
		}
	}
closed:
	mu.Lock()
	open = false
	mu.Unlock()
	for {
		select {
		case a := <-ch:
			late(a)
		default:
			return
		}
	}
}

// spawn runs f on the configured Workers, or a goroutine of its own.
func (m *MultiLock) spawn(f func()) {
	if m.cfg.workers != nil {
		m.cfg.workers.Go(f)
		return
	}
	go f()
}

func (m *MultiLock) all() []int {
	idx := make([]int, len(m.lockers))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func (m *MultiLock) record(a answer) {
	o := &m.outcomes[a.i]
	o.Answered, o.Granted, o.Remaining, o.Fence, o.RTT, o.Err = true, a.ok, a.vote.remaining, a.vote.fence, a.rtt, a.err
}

// Acquire tries every sub-lock once, in parallel, and reports whether the
// policy's quorum was granted with validity left. Each sub-lock call gets
// Policy.LockWaitTime(remaining, n) where remaining is what is left of ctx's
// deadline (or ttl when ctx has none), capped at ttl. On failure everything
// this attempt may hold is released on a fresh context, also on sub-locks that
// did not answer. Acquire may be called once per MultiLock.
//
// It returns the fencing token as fence (0 without fencing). When it fails,
// remaining is the shortest claim among refusals, a hint for when to try
// again. A MultiLock is itself a Locker, so MultiLocks nest.
func (m *MultiLock) Acquire(ctx context.Context, ttl time.Duration) (granted bool, remaining time.Duration, fence int64, err error) {
	if err := drift.Check(ttl, m.cfg.factor); err != nil {
		return false, 0, 0, errors.Join(ErrNotObtained, err)
	}
	m.mu.Lock()
	if m.state != fresh {
		m.mu.Unlock()
		return false, 0, 0, errors.New("quorumlock: Acquire called twice on one MultiLock; make a new one per attempt")
	}
	m.state, m.ttl = acquiring, ttl
	m.mu.Unlock()

	n := len(m.lockers)
	need := n - m.limit
	start := m.cfg.clock.Now()
	budget := ttl
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, dl.Sub(start))
	}
	perNode := m.cfg.policy.LockWaitTime(budget, n)

	var nGranted, refused int
	var maxFence int64
	var wait time.Duration
	var errs []error
	m.fanout(ctx, m.all(), perNode,
		func(ctx context.Context, i int) (vote, bool, error) {
			g, r, f, err := m.lockers[i].Acquire(ctx, ttl)
			return vote{granted: g, remaining: r, fence: f}, g && err == nil, err
		},
		func(a answer) bool {
			m.mu.Lock()
			m.record(a)
			m.mu.Unlock()
			switch {
			case a.ok:
				nGranted++
				maxFence = max(maxFence, a.vote.fence)
			case a.err != nil:
				refused++
			default:
				refused++
				if r := a.vote.remaining; r > 0 && (wait == 0 || r < wait) {
					wait = r
				}
			}
			return nGranted >= need || refused > m.limit
		},
		m.lateAcquire)

	end := m.cfg.clock.Now()
	elapsed := end.Sub(start)
	fail := func(cause error) (bool, time.Duration, int64, error) {
		m.mu.Lock()
		m.state, m.elapsed = failed, elapsed
		m.mu.Unlock()
		m.rollback()
		// Every sub-lock that did not grant says why, as far as known now.
		m.mu.Lock()
		for i, o := range m.outcomes {
			switch {
			case !o.Answered:
				errs = append(errs, &NodeError{Node: m.names[i], Err: ErrNoAnswer})
			case o.Err != nil:
				errs = append(errs, o.Err)
			case !o.Granted:
				errs = append(errs, &NodeError{Node: m.names[i], Err: ErrRefused})
			}
		}
		m.mu.Unlock()
		if nGranted < need && refused <= m.limit {
			// Undecided when the caller's context ended.
			errs = append(errs, ctx.Err())
		}
		return false, wait, 0, errors.Join(append([]error{ErrNotObtained, cause}, errs...)...)
	}
	if nGranted < need {
		return fail(nil)
	}
	validity := drift.Validity(ttl, elapsed, m.cfg.factor)
	if validity <= 0 {
		return fail(ErrTooSlow)
	}
	until := end.Add(validity)
	token := int64(0)
	if m.cfg.fencing {
		if err := m.fence(ctx, maxFence, until, need); err != nil {
			return fail(err)
		}
		token = maxFence
	}
	m.mu.Lock()
	m.state, m.until, m.token, m.elapsed = held, until, token, elapsed
	m.mu.Unlock()
	return true, 0, token, nil
}

// lateAcquire handles an Acquire answer that came after the decision. A late
// grant counts for a held lock (it makes the lease sturdier). For a failed
// attempt a grant, or an error (a grant may hide behind it), is given back at
// once, so no key is left behind; a refusal needs nothing.
//
// After Release, a late grant is given back only when needed: Release calls
// every sub-lock, and a share is granted at most once per attempt, so when
// this sub-lock's release answered that it freed the attempt's share, the
// grant is already gone. Only a release that found nothing (the grant ran
// after it) or failed is followed by another; when the release has not
// answered yet, its answer decides (see Release). With the usual quick
// Lock–Unlock this saves a round trip on every sub-lock that answered after
// the quorum was decided.
func (m *MultiLock) lateAcquire(a answer) {
	m.mu.Lock()
	m.record(a)
	again := false
	switch m.state {
	case failed:
		// A grant, or an error that may hide one (see rollback).
		again = a.ok || a.err != nil
	case released:
		switch {
		case m.rel == nil: // released after a failure: as failed
			again = a.ok || a.err != nil
		case !a.ok:
		case m.rel[a.i]&relAnswered == 0:
			m.rel[a.i] |= relLateGrant
		case m.rel[a.i]&relFreed == 0:
			again = true
		}
	}
	rollback := m.state == failed || m.rel == nil
	m.mu.Unlock()
	if again {
		m.releaseOne(a.i, rollback)
	}
}

// Release bookkeeping per sub-lock (MultiLock.rel).
const (
	relAnswered  = 1 << iota // this attempt's Release call answered
	relFreed                 // … and freed a share
	relLateGrant             // a grant answered after Release began
)

// releaseOne gives back sub-lock i on a fresh context: as a rollback for
// an attempt that never held the lock.
func (m *MultiLock) releaseOne(i int, rollback bool) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.releaseTimeout)
	if rollback {
		_, _ = m.giveBack(ctx, i)
	} else {
		_, _ = m.lockers[i].Release(ctx)
	}
	cancel()
}

// fence writes token back set-if-greater on the granting sub-locks and
// requires need of them to take it before until.
//
// The write-back is skipped when need granting sub-locks reported token
// itself and keep what they report (FenceKeeper): a quorum already stores
// it, so set-if-greater would change nothing there.
func (m *MultiLock) fence(ctx context.Context, token int64, until time.Time, need int) error {
	var idx []int
	kept := 0
	m.mu.Lock()
	for i, o := range m.outcomes {
		if o.Granted {
			idx = append(idx, i)
			if k, ok := m.lockers[i].(FenceKeeper); ok && o.Fence == token && k.KeepsFence() {
				kept++
			}
		}
	}
	m.mu.Unlock()
	if len(idx) < need {
		return ErrFenceNotWritten
	}
	for _, i := range idx {
		if _, ok := m.lockers[i].(Fencer); !ok {
			return fmt.Errorf("quorumlock: %s cannot take a fencing token (no Fence method)", m.names[i])
		}
	}
	if kept >= need {
		if !m.cfg.clock.Now().Before(until) {
			return ErrExpired
		}
		return nil
	}
	budget := until.Sub(m.cfg.clock.Now())
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	if budget <= 0 {
		return ErrExpired
	}
	perNode := m.cfg.policy.LockWaitTime(budget, len(m.lockers))
	var t tally
	m.fanout(ctx, idx, perNode,
		func(ctx context.Context, i int) (vote, bool, error) {
			done, err := m.lockers[i].(Fencer).Fence(ctx, token)
			return vote{}, done && err == nil, err
		},
		func(a answer) bool {
			t.add(a, nil, "")
			return t.ok >= need || len(idx)-t.bad < need
		},
		func(answer) {})
	if t.ok < need {
		return errors.Join(append([]error{ErrFenceNotWritten}, t.errs...)...)
	}
	if !m.cfg.clock.Now().Before(until) {
		return ErrExpired
	}
	return nil
}

// rollback gives back a failed attempt, on a fresh context bounded by the
// release timeout: at once on the sub-locks that granted (they answer, so
// the caller can count on them being free when Acquire returns), and in the
// background on those that failed (a grant may have happened; waiting for a
// frozen node would hold the caller). Sub-locks that have not answered yet
// are given back by lateAcquire when their answer comes — a grant or an
// error, not a refusal — so a refusal still in flight costs no release. A
// late rollback is harmless because shares are counted per attempt: it only
// ever removes this attempt's own share.
func (m *MultiLock) rollback() {
	var granted, rest []int
	m.mu.Lock()
	for i, o := range m.outcomes {
		switch {
		case o.Granted:
			granted = append(granted, i)
		case o.Answered && o.Err != nil:
			rest = append(rest, i)
		}
	}
	m.mu.Unlock()
	release := func(idx []int) {
		if len(idx) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.releaseTimeout)
		defer cancel()
		m.fanout(ctx, idx, m.cfg.releaseTimeout,
			func(ctx context.Context, i int) (vote, bool, error) {
				ok, err := m.giveBack(ctx, i)
				return vote{}, ok, err
			},
			func(answer) bool { return false },
			func(answer) {})
	}
	release(granted)
	if len(rest) == 0 {
		return
	}
	if m.cfg.tracker != nil {
		m.cfg.tracker.Add(1)
	}
	go func() {
		if m.cfg.tracker != nil {
			defer m.cfg.tracker.Done()
		}
		release(rest)
	}()
}

// Extend re-arms every sub-lock this acquisition holds to ttl, in parallel.
// It succeeds only if the policy's quorum extends before the current validity
// ends; then the validity is counted afresh from this call's start. It never
// acquires a sub-lock that was not held.
func (m *MultiLock) Extend(ctx context.Context, ttl time.Duration) (bool, error) {
	if err := drift.Check(ttl, m.cfg.factor); err != nil {
		return false, err
	}
	m.mu.Lock()
	st, until := m.state, m.until
	m.mu.Unlock()
	if st != held {
		return false, ErrNotHeld
	}
	start := m.cfg.clock.Now()
	budget := until.Sub(start)
	if budget <= 0 {
		return false, ErrExpired
	}
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, dl.Sub(start))
	}
	n := len(m.lockers)
	need := n - m.limit
	perNode := m.cfg.policy.LockWaitTime(budget, n)
	var t tally
	m.fanout(ctx, m.all(), perNode,
		func(ctx context.Context, i int) (vote, bool, error) {
			done, err := m.lockers[i].Extend(ctx, ttl)
			return vote{}, done && err == nil, err
		},
		func(a answer) bool {
			t.add(a, ErrNotHeld, m.names[a.i])
			return t.ok >= need || t.bad > m.limit
		},
		func(answer) {})
	ok, bad, gone, errs := t.ok, t.bad, t.refused, t.errs
	end := m.cfg.clock.Now()
	if ok < need {
		if bad <= m.limit {
			errs = append(errs, ctx.Err())
		}
		if gone > m.limit {
			errs = append(errs, ErrLost)
		}
		return false, errors.Join(append([]error{ErrNotHeld}, errs...)...)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !end.Before(m.until) {
		return false, ErrExpired
	}
	if m.state != held {
		return false, ErrNotHeld
	}
	v := drift.Validity(ttl, end.Sub(start), m.cfg.factor)
	if v <= 0 {
		return false, ErrTooSlow
	}
	m.until, m.ttl = end.Add(v), ttl
	return true, nil
}

// Release gives the lock back on every sub-lock, in parallel. It returns once
// the policy's quorum confirmed, or every sub-lock answered; sub-locks that
// do not answer are left to their TTL. The result is true when the quorum
// confirmed a release.
func (m *MultiLock) Release(ctx context.Context) (bool, error) { return m.release(ctx, false) }

// Rollback is Release for a MultiLock that is a sub-lock of an attempt that
// failed (an All over several names): its sub-locks are given back without
// telling waiters (Rollbacker).
func (m *MultiLock) Rollback(ctx context.Context) (bool, error) { return m.release(ctx, true) }

func (m *MultiLock) release(ctx context.Context, rollback bool) (bool, error) {
	m.mu.Lock()
	st := m.state
	m.state = released
	if st == held || st == acquiring {
		if len(m.lockers) == 1 {
			m.rel = m.one.rel[:]
		} else {
			m.rel = make([]uint8, len(m.lockers))
		}
	}
	m.mu.Unlock()
	if st != held && st != acquiring {
		return false, ErrNotHeld
	}
	n := len(m.lockers)
	need := n - m.limit
	var t tally
	m.fanout(ctx, m.all(), m.cfg.releaseTimeout,
		func(ctx context.Context, i int) (vote, bool, error) {
			var done bool
			var err error
			if rollback {
				done, err = m.giveBack(ctx, i)
			} else {
				done, err = m.lockers[i].Release(ctx)
			}
			freed := done && err == nil
			m.mu.Lock()
			r := m.rel[i] | relAnswered
			if freed {
				r |= relFreed
			}
			m.rel[i] = r
			m.mu.Unlock()
			if r&relLateGrant != 0 && !freed {
				// A grant answered after this release was sent and the
				// release did not free it: it ran after the release.
				m.releaseOne(i, rollback)
			}
			return vote{}, freed, err
		},
		func(a answer) bool {
			t.add(a, nil, "")
			return t.ok >= need || t.bad > m.limit
		},
		func(answer) {})
	if t.ok < need {
		return false, errors.Join(append([]error{ErrNotHeld}, t.errs...)...)
	}
	return true, nil
}

// tally counts one phase's answers (extend, fence, release): successes,
// failures, and among those the plain refusals (false without an error).
type tally struct {
	ok, bad, refused int
	errs             []error
}

// add counts a. A refusal is recorded as a NodeError of node with refusal,
// when refusal is not nil.
func (t *tally) add(a answer, refusal error, node string) {
	switch {
	case a.ok:
		t.ok++
		return
	case a.err != nil:
		t.errs = append(t.errs, a.err)
	default:
		t.refused++
		if refusal != nil {
			t.errs = append(t.errs, &NodeError{Node: node, Err: refusal})
		}
	}
	t.bad++
}

// Until is the end of the validity (zero before a successful Acquire).
func (m *MultiLock) Until() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.until
}

// Token is the fencing token (0 without fencing).
func (m *MultiLock) Token() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// Elapsed is how long Acquire took.
func (m *MultiLock) Elapsed() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.elapsed
}

// Outcomes returns a copy of what each sub-lock last answered.
func (m *MultiLock) Outcomes() []Outcome {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Outcome(nil), m.outcomes...)
}

// Held reports whether the acquisition succeeded and was not released.
func (m *MultiLock) Held() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state == held
}

// DriftAllowance is the part of ttl given up to clock drift with this
// MultiLock's factor.
func (m *MultiLock) DriftAllowance(ttl time.Duration) time.Duration {
	return drift.Allowance(ttl, m.cfg.factor)
}

// String names the sub-locks.
func (m *MultiLock) String() string {
	return fmt.Sprintf("multilock%v", m.names)
}
