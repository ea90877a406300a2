package quorum

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A handle counts its live leases, and a second Lock on it while one
// lives waits and then takes the lock as usual (its first try goes
// straight to the acquire script: node.Lock.ExpectHeld).
func TestLiveLeasesHint(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients)
	m := mustMutex(t, c, "hint")
	ctx := t.Context()
	l1, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.live.Load(); got != 1 {
		t.Fatalf("live leases %d, want 1", got)
	}
	if _, err := m.TryLock(ctx); err == nil {
		t.Fatal("TryLock granted while this handle holds the lock")
	}
	got := make(chan error, 1)
	go func() {
		l2, err := m.Lock(ctx)
		if err == nil {
			err = l2.Unlock(context.Background())
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("second Lock: %v", err)
	}
	if got := m.live.Load(); got != 0 {
		t.Fatalf("live leases %d after both unlocked, want 0", got)
	}
	// The hint on with the lock free (a lease that ended on the nodes but
	// not yet here): the script grants it.
	m.live.Add(1)
	l3, err := m.TryLock(ctx)
	m.live.Add(-1)
	if err != nil {
		t.Fatalf("TryLock of a free lock with the hint: %v", err)
	}
	_ = l3.Unlock(ctx)
}

// A waiting Lock's later tries skip the SET NX: the lock was held a moment
// ago, and when one unlock message wakes several waiters all but one would
// fail it and pay a round trip before the script. Only the first try sends
// SET NX; the try that gets the lock after the release runs the script.
func TestWaiterRetriesSkipSetNX(t *testing.T) {
	servers, clients := cluster(t, 3)
	holder := newClient(t, clients)
	var sets, scripts, attempts atomic.Int64
	wclients := clientsOf(t, servers, func(int) redis.Hook {
		return beforeCommand(func(cmd redis.Cmder) {
			switch name := cmd.Name(); {
			case name == "set" && slices.ContainsFunc(cmd.Args(), func(a any) bool { return a == "nx" }):
				sets.Add(1)
			case strings.HasPrefix(name, "eval"):
				scripts.Add(1)
			}
		})
	})
	waiter := newClient(t, wclients, WithObserver(observerFunc(func(_ context.Context, e Event) {
		if e.Op == OpAttempt {
			attempts.Add(1)
		}
	})))
	ctx := t.Context()
	l1, err := mustMutex(t, holder, "skip").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := mustMutexNoT(waiter, "skip").Lock(ctx)
		if err == nil {
			err = l2.Unlock(context.Background())
		}
		got <- err
	}()
	for attempts.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	n := int64(len(servers))
	t.Logf("waiter: %d attempts, %d SET NX, %d scripts", attempts.Load(), sets.Load(), scripts.Load())
	if attempts.Load() < 2 {
		t.Fatalf("the waiter got the lock in %d attempts, want a refusal first", attempts.Load())
	}
	if sets.Load() > n {
		t.Fatalf("the waiter sent %d SET NX over %d attempts on %d nodes: want them on the first try only", sets.Load(), attempts.Load(), n)
	}
}
