// The algorithm: one acquisition over a set of sub-locks (Acquire, the
// fencing write-back, rollback, late answers, Extend, Release) and its
// state. The errors are in errors.go, what a sub-lock is in locker.go,
// the options in options.go, the parallel calls in fanout.go, the quorum
// rules in policy.go.

package multilock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/drift"
)

// vote is a sub-lock's answer to Acquire.
type vote struct {
	granted   bool
	remaining time.Duration
	fence     int64
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

	// actx, octx and rctx back the deadline-only contexts of Acquire (the
	// attempt's, its one node's call) and Release, which each run once per
	// MultiLock: no allocation of their own.
	actx, octx, rctx deadlineCtx

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
	// The options write into m itself: a config of its own would escape
	// (each option takes its address) and cost an allocation per attempt.
	m := &MultiLock{lockers: lockers, cfg: config{policy: Majority, factor: drift.DefaultFactor, clock: drift.System, releaseTimeout: 250 * time.Millisecond}}
	cfg := &m.cfg
	for _, o := range opts {
		o(cfg)
	}
	n := len(lockers)
	if n == 0 {
		return nil, errors.New("quorumlock: no sub-locks given")
	}
	if cfg.policy == nil {
		return nil, errors.New("quorumlock: WithPolicy(nil): give a policy, e.g. multilock.Majority")
	}
	if cfg.clock == nil {
		return nil, errors.New("quorumlock: WithClock(nil): give a clock, e.g. drift.System")
	}
	if l := cfg.policy.FailedLocksLimit(n); l < 0 || l >= n {
		return nil, fmt.Errorf("quorumlock: WithPolicy: the policy allows %d failures of %d sub-locks; it must be in [0, %d]", l, n, n-1)
	}
	if f := cfg.factor; f < 0 || f >= 1 || f != f {
		return nil, fmt.Errorf("quorumlock: WithDriftFactor(%v): the factor must be in [0, 1)", f)
	}
	if cfg.releaseTimeout <= 0 {
		return nil, fmt.Errorf("quorumlock: WithReleaseTimeout(%v): must be positive", cfg.releaseTimeout)
	}
	m.limit = cfg.policy.FailedLocksLimit(n)
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
// giveBack gives back sub-lock i of an attempt that never held the lock.
func (m *MultiLock) giveBack(ctx context.Context, i int) (bool, error) {
	if r, ok := m.lockers[i].(Rollbacker); ok {
		return r.Rollback(ctx)
	}
	return m.lockers[i].Release(ctx)
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
		return false, 0, 0, NewError(OpAcquire, ErrNotObtained, len(m.lockers), err)
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
	if d := m.cfg.attemptTimeout; d > 0 {
		dl := m.wall(start).Add(d)
		if m.bound {
			ctx = m.actx.bound(ctx, dl)
		} else {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl)
			defer cancel()
		}
	}
	budget := ttl
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, dl.Sub(start))
	}
	perNode := m.cfg.policy.LockWaitTime(budget, n)

	var nGranted, refused int
	var maxFence int64
	var wait time.Duration
	decide := func(a answer) bool {
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
	}
	var end time.Time
	if n == 1 {
		var a answer
		a, end = m.acquireOne(ctx, start, perNode, ttl)
		decide(a)
	} else {
		m.fanout(ctx, m.all(), perNode,
			func(ctx context.Context, i int) (vote, bool, error) {
				g, r, f, err := m.lockers[i].Acquire(ctx, ttl)
				return vote{granted: g, remaining: r, fence: f}, g && err == nil, err
			},
			decide, m.lateAcquire)
		end = m.cfg.clock.Now()
	}
	elapsed := end.Sub(start)
	fail := func(cause error) (bool, time.Duration, int64, error) {
		m.mu.Lock()
		m.state, m.elapsed = failed, elapsed
		m.mu.Unlock()
		m.rollback()
		// Every sub-lock that did not grant says why, as far as known now.
		// One that had not answered is an error only when the caller's
		// context ended before the outcome was decided; when the outcome
		// was known without it, it is merely undecided (not waited for).
		cut := nGranted < need && refused <= m.limit
		e := NewError(OpAcquire, ErrNotObtained, n, cause)
		e.Granted = nGranted
		var errs []error
		m.mu.Lock()
		for i, o := range m.outcomes {
			switch {
			case !o.Answered && cut:
				errs = append(errs, &NodeError{Node: m.names[i], Err: ErrNoAnswer})
			case !o.Answered:
				e.Undecided++
			case o.Err != nil:
				errs = append(errs, o.Err)
			case !o.Granted:
				errs = append(errs, &NodeError{Node: m.names[i], Err: ErrTaken})
			}
		}
		m.mu.Unlock()
		if cut {
			errs = append(errs, ctx.Err())
		}
		e.add(errs...)
		return false, wait, 0, e
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

// acquireOne is Acquire's call of its only sub-lock: inline (inlineCtx),
// so it has no late answer. It reads the clock once, after the answer:
// that reading is also the attempt's end (the validity counts from start,
// read before the call was sent, so it is as safe as a later reading),
// and start bounds the call's deadline. Clock readings are a visible
// share of a lone caller's Lock+Unlock, so each one is counted.
func (m *MultiLock) acquireOne(ctx context.Context, start time.Time, perNode, ttl time.Duration) (answer, time.Time) {
	pctx, cancel := m.inlineCtx(ctx, &m.octx, m.wall(start), perNode)
	g, r, f, err := m.lockers[0].Acquire(pctx, ttl)
	end := m.cfg.clock.Now()
	if cancel != nil {
		cancel()
	}
	return m.answerOf(0, vote{granted: g, remaining: r, fence: f}, g && err == nil, err, end.Sub(start)), end
}

// wall is the real time when now is a reading of drift.System, which is
// the real clock; for another clock (a test's) it reads the real clock.
// Deadlines of calls are real time.
func (m *MultiLock) wall(now time.Time) time.Time {
	if m.cfg.clock == drift.System {
		return now
	}
	return time.Now()
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
// requires need of them to hold it before until.
//
// A granting sub-lock that reported token itself and keeps what it reports
// (FenceKeeper) holds it already: set-if-greater would change nothing
// there. So the write-back goes only to the others, and when need sub-locks
// reported token it is skipped. Why that is enough: token is the max the
// granting sub-locks reported, so every one of them holds ≥ token once
// written; need of them holding it while their grants stand is what makes
// any later quorum (which intersects this one on a sub-lock where it
// counts up after this grant ended) report more.
func (m *MultiLock) fence(ctx context.Context, token int64, until time.Time, need int) error {
	var idx []int // granting sub-locks that may lack token
	granted, kept, noFence := 0, 0, -1
	m.mu.Lock()
	for i, o := range m.outcomes {
		if !o.Granted {
			continue
		}
		granted++
		if _, ok := m.lockers[i].(Fencer); !ok {
			noFence = i
		}
		if k, ok := m.lockers[i].(FenceKeeper); ok && o.Fence == token && k.KeepsFence() {
			kept++
		} else {
			idx = append(idx, i)
		}
	}
	m.mu.Unlock()
	if granted < need {
		return ErrFenceNotWritten
	}
	if noFence >= 0 {
		return fmt.Errorf("quorumlock: %s cannot take a fencing token (no Fence method)", m.names[noFence])
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
			return kept+t.ok >= need || kept+len(idx)-t.bad < need
		},
		func(answer) {})
	if kept+t.ok < need {
		e := NewError(OpFence, ErrFenceNotWritten, granted, t.errs...)
		e.Granted, e.Undecided = kept+t.ok, len(idx)-t.ok-t.bad
		return e
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
			t.add(a, errNotHeldHere, m.names[a.i])
			return t.ok >= need || t.bad > m.limit
		},
		func(answer) {})
	ok, bad, gone := t.ok, t.bad, t.refused
	end := m.cfg.clock.Now()
	if ok < need {
		e := NewError(OpExtend, ErrNotHeld, n, t.errs...)
		e.Granted, e.Undecided = ok, n-ok-bad
		if bad <= m.limit {
			e.WithCause(ctx.Err())
		}
		if gone > m.limit {
			e.WithCause(ErrLost)
		}
		return false, e
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
	decide := func(a answer) bool {
		t.add(a, errNotHeldHere, m.names[a.i])
		return t.ok >= need || t.bad > m.limit
	}
	if n == 1 {
		// The only sub-lock, inline (inlineCtx), without fanout's closures,
		// and without timing the call: a release's round trip is recorded
		// nowhere (tally), and each clock reading costs (acquireOne).
		pctx, cancel := m.inlineCtx(ctx, &m.rctx, time.Now(), m.cfg.releaseTimeout)
		_, freed, err := m.releaseAt(pctx, 0, rollback)
		if cancel != nil {
			cancel()
		}
		decide(m.answerOf(0, vote{}, freed, err, 0))
	} else {
		m.fanout(ctx, m.all(), m.cfg.releaseTimeout,
			func(ctx context.Context, i int) (vote, bool, error) { return m.releaseAt(ctx, i, rollback) },
			decide, func(answer) {})
	}
	if t.ok < need {
		e := NewError(OpRelease, ErrNotHeld, n, t.errs...)
		e.Granted, e.Undecided = t.ok, n-t.ok-t.bad
		return false, e
	}
	return true, nil
}

// releaseAt is Release's (or Rollback's) call of sub-lock i.
func (m *MultiLock) releaseAt(ctx context.Context, i int, rollback bool) (vote, bool, error) {
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
		// A grant answered after this release was sent and the release
		// did not free it: it ran after the release.
		m.releaseOne(i, rollback)
	}
	return vote{}, freed, err
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

// String names the sub-locks.
func (m *MultiLock) String() string {
	return fmt.Sprintf("multilock%v", m.names)
}
