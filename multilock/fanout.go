package multilock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// answer is one sub-lock's answer to one call of a fan-out.
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
	if len(idx) == 1 {
		// Nothing to overlap with: the call runs inline (see inlineCtx).
		i := idx[0]
		pctx, cancel := m.inlineCtx(ctx, nil, time.Now(), perNode)
		t0 := m.cfg.clock.Now()
		v, ok, err := call(pctx, i)
		rtt := m.cfg.clock.Now().Sub(t0)
		if cancel != nil {
			cancel()
		}
		decide(m.answerOf(i, v, ok, err, rtt))
		return
	}
	dl := time.Now().Add(perNode)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	var (
		pctx   context.Context
		cancel context.CancelFunc
		left   atomic.Int32
	)
	if m.bound {
		pctx = deadlineOnly(context.WithoutCancel(ctx), dl)
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
		return m.answerOf(i, v, ok, err, rtt)
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

// inlineCtx is the context of a phase over a single sub-lock (a quorum of one node, the most
// common deployment): there is nothing to overlap, so the call runs on the
// calling goroutine, bounded by the caller's own context (cancellation
// included) and perNode, with no goroutine or channel. Acquire and Release
// call their one sub-lock directly, without fanout's closures.
//
// now is the real time when the phase starts: the call's deadline is
// now + perNode. slot, when not nil, holds the deadline-only context (a
// phase that runs once per MultiLock, so the context is never rewritten
// while a call may still read it).
func (m *MultiLock) inlineCtx(ctx context.Context, slot *deadlineCtx, now time.Time, perNode time.Duration) (context.Context, context.CancelFunc) {
	dl := now.Add(perNode)
	d, hasDeadline := ctx.Deadline()
	switch {
	case hasDeadline && !d.After(dl):
		return ctx, nil
	case m.bound && slot != nil:
		return slot.bound(ctx, dl), nil
	case m.bound:
		return deadlineOnly(ctx, dl), nil
	}
	return context.WithDeadline(ctx, dl)
}

// answerOf is a call's answer, its error naming the sub-lock.
func (m *MultiLock) answerOf(i int, v vote, ok bool, err error, rtt time.Duration) answer {
	if err != nil {
		err = &NodeError{Node: m.names[i], Err: err}
	}
	return answer{i: i, vote: v, ok: ok, err: err, rtt: rtt}
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
