package checker

import (
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// A free lock taken within the bound passes; one left untaken while a
// waiter waits past the bound is a violation; without a bound the check
// is Unknown.
func TestWakeups(t *testing.T) {
	bound := WakeupBound(100*time.Millisecond, 250*time.Millisecond)
	if bound != 370*time.Millisecond {
		t.Fatalf("WakeupBound = %v", bound)
	}
	build := func(next float64) history.History {
		var b hb
		l := b.acquire(0, 0, 1, 0, 0)
		b.acquire(1, 5, next, 0, 0) // waits from 5 ms
		b.release(0, l, 100)        // free at 100.5 ms
		b.add(history.Op{Worker: 2, Kind: history.Read, Invoke: ms(2000), Complete: ms(2001)})
		return b.h()
	}
	if r := Check(build(300), WithWakeupBound(bound), WithoutLinearizability()); r.Wakeups.Verdict != Ok {
		t.Errorf("taken 200 ms after the release: %v", r.Wakeups)
	}
	r := Check(build(900), WithWakeupBound(bound), WithoutLinearizability())
	if r.Wakeups.Verdict != Violated || r.Wakeups.Count != 1 {
		t.Errorf("taken 800 ms after the release: %v", r.Wakeups)
	}
	if s := r.Summarize(FreeLockTaken); s.Verdict != Violated {
		t.Errorf("FreeLockTaken: %+v", s)
	}
	if r := Check(build(900), WithoutLinearizability()); r.Wakeups.Verdict != Unknown {
		t.Errorf("no bound: %v", r.Wakeups)
	}
}
