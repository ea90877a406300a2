package multilock

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/drift"
)

// countingClock counts its readings.
type countingClock struct {
	drift.Clock
	reads atomic.Int64
}

func (c *countingClock) Now() time.Time {
	c.reads.Add(1)
	return c.Clock.Now()
}

// TestOneNodeClockReadings pins how often a one-node Acquire and Release
// read the clock: twice in all (the attempt's start and end), where they
// read it six times before. A clock reading costs about 0.2 µs on the
// machine class the bench runs on, a lone Lock+Unlock about 45 µs.
func TestOneNodeClockReadings(t *testing.T) {
	clk := &countingClock{Clock: drift.NewFake(time.Unix(1000, 0))}
	m := newML(t, lockers(fakeNodes(1), "a"), WithClock(clk))
	if ok, _, _, err := m.Acquire(t.Context(), time.Second); !ok {
		t.Fatal(err)
	}
	if ok, err := m.Release(t.Context()); !ok {
		t.Fatal(err)
	}
	if got := clk.reads.Load(); got > 2 {
		t.Fatalf("one-node Acquire+Release read the clock %d times, want at most 2", got)
	}
}

// TestOneNodeValidityCountsTheCall checks the safety of acquireOne's single
// reading: the time the node's call took counts in the elapsed time, so a
// grant that took the whole TTL is refused and given back, and a shorter
// one ends no later than the TTL less the drift allowance after the call
// was sent (the earliest time the node may drop the key).
func TestOneNodeValidityCountsTheCall(t *testing.T) {
	const ttl = 10 * time.Second
	for _, delay := range []time.Duration{0, 3 * time.Second, 11 * time.Second} {
		clk := drift.NewFake(time.Unix(1000, 0))
		ns := fakeNodes(1)
		ns[0].set(func(n *fakeNode) { n.clock, n.advance = clk, delay })
		m := newML(t, lockers(ns, "a"), WithClock(clk))
		start := clk.Now()
		ok, _, _, err := m.Acquire(t.Context(), ttl)
		if delay >= ttl {
			if ok || !errors.Is(err, ErrTooSlow) {
				t.Fatalf("delay %v: Acquire = %v, %v; want ErrTooSlow", delay, ok, err)
			}
			if ns[0].held() != "" {
				t.Fatalf("delay %v: the node kept a grant of a too-slow attempt", delay)
			}
			continue
		}
		if !ok {
			t.Fatalf("delay %v: %v", delay, err)
		}
		if got := m.Elapsed(); got < delay {
			t.Fatalf("delay %v: elapsed %v does not count the call", delay, got)
		}
		want := start.Add(ttl - drift.Allowance(ttl, drift.DefaultFactor))
		if u := m.Until(); u.After(want) {
			t.Fatalf("delay %v: valid until %v, after %v", delay, u, want)
		}
	}
}
