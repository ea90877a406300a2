package multilock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/drift"
	"github.com/quorumlock/quorumlock/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

func newML(t *testing.T, ls []Locker, opts ...Option) *MultiLock {
	t.Helper()
	m, err := New(ls, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPolicies(t *testing.T) {
	tests := []struct {
		p         Policy
		n, limit  int
		remaining time.Duration
		wait      time.Duration
	}{
		{Majority, 1, 0, 100 * time.Millisecond, 100 * time.Millisecond},
		{Majority, 3, 1, 300 * time.Millisecond, 100 * time.Millisecond},
		{Majority, 5, 2, 250 * time.Millisecond, 50 * time.Millisecond},
		{Majority, 4, 1, time.Millisecond, time.Millisecond},
		{Majority, 7, 3, 0, time.Millisecond},
		{All, 5, 0, 250 * time.Millisecond, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := tt.p.FailedLocksLimit(tt.n); got != tt.limit {
			t.Errorf("%v.FailedLocksLimit(%d) = %d, want %d", tt.p, tt.n, got, tt.limit)
		}
		if got := tt.p.LockWaitTime(tt.remaining, tt.n); got != tt.wait {
			t.Errorf("%v.LockWaitTime(%v, %d) = %v, want %v", tt.p, tt.remaining, tt.n, got, tt.wait)
		}
	}
}

type limitPolicy int

func (p limitPolicy) FailedLocksLimit(int) int                        { return int(p) }
func (limitPolicy) LockWaitTime(r time.Duration, _ int) time.Duration { return r }

func TestNewRejectsBadInput(t *testing.T) {
	ns := fakeNodes(3)
	tests := []struct {
		name string
		ls   []Locker
		opts []Option
	}{
		{"no sub-locks", nil, nil},
		{"nil sub-lock", []Locker{lockers(ns, "a")[0], nil}, nil},
		{"limit n", lockers(ns, "a"), []Option{WithPolicy(limitPolicy(3))}},
		{"negative limit", lockers(ns, "a"), []Option{WithPolicy(limitPolicy(-1))}},
		{"nil policy", lockers(ns, "a"), []Option{WithPolicy(nil)}},
		{"bad factor", lockers(ns, "a"), []Option{WithDriftFactor(-1)}},
		{"zero release timeout", lockers(ns, "a"), []Option{WithReleaseTimeout(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.ls, tt.opts...); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestMajorityDecidesWithoutHungNodes(t *testing.T) {
	ns := fakeNodes(5)
	ns[3].set(func(n *fakeNode) { n.hang = true })
	ns[4].set(func(n *fakeNode) { n.hang = true })
	var wg sync.WaitGroup
	m := newML(t, lockers(ns, "a"), WithTracker(&wg))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	ok, _, _, err := m.Acquire(ctx, 10*time.Second)
	took := time.Since(start)
	if !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	// Per-node budget is 10s/5 = 2s; the decision must not wait for it.
	if took > time.Second {
		t.Fatalf("decision waited for hung nodes: %v", took)
	}
	if _, err := m.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	cancel() // hung calls end with the caller's context
	wg.Wait()
}

func TestRefusedQuorumRollsBack(t *testing.T) {
	ns := fakeNodes(5)
	// Another holder has three nodes.
	other := newML(t, lockers(ns[:3], "other"), WithPolicy(All))
	if ok, _, _, err := other.Acquire(t.Context(), time.Second); !ok {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	m := newML(t, lockers(ns, "a"), WithTracker(&wg))
	ok, remaining, _, err := m.Acquire(t.Context(), time.Second)
	if ok || !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrTaken) {
		t.Fatalf("Acquire = %v, %v; want ErrNotObtained with ErrTaken", ok, err)
	}
	var ne *NodeError
	if !errors.As(err, &ne) || ne.Node == "" {
		t.Fatalf("no node named in %v", err)
	}
	if remaining != 7*time.Second {
		t.Fatalf("retry hint %v, want the refusals' 7s", remaining)
	}
	wg.Wait()
	for _, n := range ns[3:] {
		if h := n.held(); h != "" {
			t.Fatalf("%s still held by %q after a failed attempt", n.name, h)
		}
	}
	if _, err := m.Release(t.Context()); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Release of a failed attempt: %v", err)
	}
}

func TestAllPolicyNeedsEveryNode(t *testing.T) {
	ns := fakeNodes(3)
	ns[2].set(func(n *fakeNode) { n.down = true })
	var wg sync.WaitGroup
	m := newML(t, lockers(ns, "a"), WithPolicy(All), WithTracker(&wg))
	ok, _, _, err := m.Acquire(t.Context(), time.Second)
	if ok || !errors.Is(err, errDown) {
		t.Fatalf("All with a node down: %v, %v", ok, err)
	}
	wg.Wait()
	for _, n := range ns[:2] {
		if n.held() != "" {
			t.Fatalf("%s kept the rolled-back grant", n.name)
		}
	}
}

// Validity is shortened by a slow acquisition, and an acquisition slower than
// the TTL fails and gives back what it got.
func TestValidityAfterSlowAcquisition(t *testing.T) {
	const ttl = 10 * time.Second
	for _, delay := range []time.Duration{0, 3 * time.Second, 11 * time.Second} {
		clk := drift.NewFake(time.Unix(1000, 0))
		ns := fakeNodes(3)
		for _, n := range ns {
			n.set(func(n *fakeNode) { n.clock = clk })
		}
		ns[0].set(func(n *fakeNode) { n.advance = delay })
		var wg sync.WaitGroup
		m := newML(t, lockers(ns, "a"), WithClock(clk), WithPolicy(All), WithTracker(&wg))
		start := clk.Now()
		ok, _, _, err := m.Acquire(t.Context(), ttl)
		wg.Wait()
		elapsed := m.Elapsed()
		want := drift.Validity(ttl, elapsed, drift.DefaultFactor)
		if delay >= ttl {
			if ok || !errors.Is(err, ErrTooSlow) {
				t.Fatalf("delay %v: Acquire = %v, %v; want ErrTooSlow", delay, ok, err)
			}
			for _, n := range ns {
				if n.held() != "" {
					t.Fatalf("delay %v: %s kept a grant of a too-slow attempt", delay, n.name)
				}
			}
			continue
		}
		if !ok {
			t.Fatalf("delay %v: %v", delay, err)
		}
		if elapsed < delay {
			t.Fatalf("elapsed %v < injected delay %v", elapsed, delay)
		}
		got := m.Until().Sub(start.Add(elapsed))
		if got != want || got > ttl-delay-drift.Allowance(ttl, drift.DefaultFactor) {
			t.Fatalf("delay %v: validity %v, want %v", delay, got, want)
		}
	}
}

func TestExtendNeedsQuorumWithinValidity(t *testing.T) {
	clk := drift.NewFake(time.Unix(1000, 0))
	ns := fakeNodes(3)
	m := newML(t, lockers(ns, "a"), WithClock(clk))
	if ok, _, _, err := m.Acquire(t.Context(), time.Second); !ok {
		t.Fatal(err)
	}
	u0 := m.Until()
	clk.Advance(500 * time.Millisecond)
	if ok, err := m.Extend(t.Context(), time.Second); !ok {
		t.Fatalf("Extend: %v", err)
	}
	if !m.Until().After(u0) {
		t.Fatal("Extend did not move the validity")
	}
	// Two nodes lost our grant (e.g. restarted empty): no quorum, and no
	// re-acquisition behind our back.
	ns[0].set(func(n *fakeNode) { n.holder = "" })
	ns[1].set(func(n *fakeNode) { n.holder = "" })
	ok, err := m.Extend(t.Context(), time.Second)
	if ok || !errors.Is(err, ErrNotHeld) || !errors.Is(err, ErrLost) {
		t.Fatalf("Extend with 2 of 3 lost: %v, %v", ok, err)
	}
	if ns[0].held() != "" {
		t.Fatal("Extend re-acquired a node")
	}
	clk.Advance(2 * time.Second)
	if ok, err := m.Extend(t.Context(), time.Second); ok || !errors.Is(err, ErrExpired) {
		t.Fatalf("Extend after validity: %v, %v", ok, err)
	}
}

func TestFencingWritesBackMax(t *testing.T) {
	ns := fakeNodes(3)
	// A previous holder wrote 41 back to a majority.
	ns[1].set(func(n *fakeNode) { n.stored = 41 })
	ns[2].set(func(n *fakeNode) { n.stored = 41 })
	var wg sync.WaitGroup
	m := newML(t, lockers(ns, "a"), WithFencing(true), WithTracker(&wg))
	ok, _, tok, err := m.Acquire(t.Context(), time.Second)
	wg.Wait()
	if !ok || tok != 42 || m.Token() != 42 {
		t.Fatalf("token %d (%v, %v), want 42", tok, ok, err)
	}
	written := 0
	for _, n := range ns {
		n.mu.Lock()
		if n.stored == 42 {
			written++
		}
		n.mu.Unlock()
	}
	if written < 2 {
		t.Fatalf("token written back on %d nodes, want a majority", written)
	}
	if _, err := m.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	m2 := newML(t, lockers(ns[:2], "b"), WithFencing(true))
	if _, _, tok2, err := m2.Acquire(t.Context(), time.Second); tok2 <= tok {
		t.Fatalf("next token %d not above %d (%v)", tok2, tok, err)
	}
}

// MultiLocks nest: a MultiLock (All) over two RedLocks.
func TestNested(t *testing.T) {
	a, b := fakeNodes(3), fakeNodes(3)
	var wg sync.WaitGroup
	ra := newML(t, lockers(a, "x"), WithTracker(&wg))
	rb := newML(t, lockers(b, "x"), WithTracker(&wg))
	outer := newML(t, []Locker{ra, rb}, WithPolicy(All), WithTracker(&wg))
	if ok, _, _, err := outer.Acquire(t.Context(), time.Second); !ok {
		t.Fatal(err)
	}
	if !ra.Held() || !rb.Held() {
		t.Fatal("members not held")
	}
	if ok, err := outer.Extend(t.Context(), time.Second); !ok {
		t.Fatal(err)
	}
	if ok, err := outer.Release(t.Context()); !ok {
		t.Fatal(err)
	}
	wg.Wait()
	for _, n := range append(a, b...) {
		if n.held() != "" {
			t.Fatalf("%s still held", n.name)
		}
	}
	// One member unobtainable: the whole fails and the other is released.
	b[0].set(func(n *fakeNode) { n.down = true })
	b[1].set(func(n *fakeNode) { n.down = true })
	ra2 := newML(t, lockers(a, "y"), WithTracker(&wg))
	rb2 := newML(t, lockers(b, "y"), WithTracker(&wg))
	outer2 := newML(t, []Locker{ra2, rb2}, WithPolicy(All), WithTracker(&wg))
	if ok, _, _, _ := outer2.Acquire(t.Context(), time.Second); ok {
		t.Fatal("outer acquired with a member down")
	}
	wg.Wait()
	for _, n := range a {
		if n.held() != "" {
			t.Fatalf("%s kept a grant of a failed nested attempt", n.name)
		}
	}
}

func TestAcquireOnce(t *testing.T) {
	m := newML(t, lockers(fakeNodes(1), "a"))
	if ok, _, _, err := m.Acquire(t.Context(), time.Second); !ok {
		t.Fatal(err)
	}
	if _, _, _, err := m.Acquire(t.Context(), time.Second); err == nil {
		t.Fatal("second Acquire on one MultiLock accepted")
	}
}

func TestCancelledContextIsReported(t *testing.T) {
	ns := fakeNodes(3)
	for _, n := range ns {
		n.set(func(n *fakeNode) { n.hang = true })
	}
	var wg sync.WaitGroup
	m := newML(t, lockers(ns, "a"), WithTracker(&wg))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, _, _, err := m.Acquire(ctx, time.Second)
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	wg.Wait()
}
