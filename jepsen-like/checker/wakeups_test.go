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

// A waiter passed over by more later acquires than the bound is starved;
// one passed over fewer times, or only by acquires invoked before it, is
// not; without a bound the check is Unknown.
func TestStarvation(t *testing.T) {
	// Worker 0 waits from 1 ms to done; worker 1 loops, each acquire
	// invoked after worker 0's and completed before done.
	build := func(done float64, loops int) history.History {
		var b hb
		early := b.acquire(1, 0, 0.5, 0, 0) // invoked before worker 0: never counts
		b.release(1, early, 0.8)
		b.acquire(0, 1, done, 0, 0)
		for i := range loops {
			at := 2 + float64(i)*3
			l := b.acquire(1, at, at+1, 0, 0)
			b.release(1, l, at+2)
		}
		return b.h()
	}
	if r := Check(build(200, 5), WithStarveBound(5), WithoutLinearizability()); r.Starvation.Verdict != Ok {
		t.Errorf("passed over 5 times, bound 5: %v", r.Starvation)
	}
	r := Check(build(200, 6), WithStarveBound(5), WithoutLinearizability())
	if r.Starvation.Verdict != Violated || r.Starvation.Count != 1 {
		t.Errorf("passed over 6 times, bound 5: %v", r.Starvation)
	}
	if s := r.Summarize(NoStarvation); s.Verdict != Violated {
		t.Errorf("NoStarvation: %+v", s)
	}
	// Acquires that complete after the waiter's do not pass it over.
	if r := Check(build(10, 6), WithStarveBound(5), WithoutLinearizability()); r.Starvation.Verdict != Ok {
		t.Errorf("served at 10 ms: %v", r.Starvation)
	}
	if r := Check(build(200, 6), WithoutLinearizability()); r.Starvation.Verdict != Unknown {
		t.Errorf("no bound: %v", r.Starvation)
	}
}
