package quorum

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// A holder keeps a bare majority (nodes 0–2 of 5: its keys on 3 and 4 are
// gone, as after a partition or a restart of those two). A waiting Lock
// must not spin: each attempt takes nodes 3–4, fails the quorum and gives
// them back, and that rollback used to publish an unlock message that woke
// the waiter again (about 3,000 attempts a second). Then the holder's
// Unlock still wakes the waiter at once.
func TestWaiterDoesNotSpinOnBareMajority(t *testing.T) {
	_, clients := cluster(t, 5)
	// A long release budget: the holder's Unlock must reach all three of
	// its nodes, and 250 ms was once too short on a loaded CI machine.
	a := newClient(t, clients, WithFencing(), WithReleaseTimeout(5*time.Second))
	var attempts atomic.Int64
	var mu sync.Mutex
	var lastAttempt time.Time
	b := newClient(t, clients, WithFencing(), WithRetryInterval(time.Minute),
		WithObserver(observerFunc(func(_ context.Context, e Event) {
			if e.Op == OpAttempt {
				attempts.Add(1)
				mu.Lock()
				lastAttempt = e.Start
				mu.Unlock()
			}
		})))
	ctx := t.Context()
	lease, err := mustMutex(t, a, "job").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys := node.Keys{}
	for i, n := range a.nodes {
		keys = n.Keys("job")
		if i >= 3 {
			if err := clients[i].Del(ctx, keys.Lock).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fenceBefore, _ := clients[3].Get(ctx, keys.Fence).Int64()

	const window = 2 * time.Second
	got := make(chan error, 1)
	var acquired time.Time
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		l, err := mustMutexNoT(b, "job").Lock(wctx)
		acquired = time.Now()
		if err == nil {
			_ = l.Unlock(ctx)
		}
		got <- err
	}()
	time.Sleep(window)
	during := attempts.Load()
	fenceAfter, _ := clients[3].Get(ctx, keys.Fence).Int64()
	t.Logf("while the holder kept nodes 0-2 of 5: %d attempts in %v (%.1f/s); fencing counter on node 3 grew by %d (%.2f per attempt)",
		during, window, float64(during)/window.Seconds(), fenceAfter-fenceBefore, float64(fenceAfter-fenceBefore)/float64(max(during, 1)))
	if during > 2*10+5 {
		t.Errorf("a waiting Lock made %d attempts in %v while the lock stayed held, want at most 10 a second", during, window)
	}
	// Its back-off is now long (≥ 0.5 ms × 2^10 ≈ 0.5 s, the retry interval
	// being a minute): getting the lock sooner after the release than that
	// shows the unlock message woke it.
	unlocked := time.Now()
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter did not get the lock after the release: %v", err)
	}
	gap := acquired.Sub(unlocked)
	t.Logf("release → waiter's grant: %v", gap)
	if gap >= 500*time.Millisecond {
		mu.Lock()
		t.Errorf("the waiter got the lock %v after the release (last attempt before at %v): not woken by the unlock message", gap, lastAttempt.Sub(unlocked))
		mu.Unlock()
	}
}

func mustMutexNoT(c *Client, name string) *Mutex {
	m, err := c.Mutex(name)
	if err != nil {
		panic(errors.Join(errors.New("mutex"), err))
	}
	return m
}
