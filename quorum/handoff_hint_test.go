package quorum

import (
	"context"
	"testing"
	"time"
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
