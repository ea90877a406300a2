package quorum

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
)

// Two of five nodes frozen (SIGSTOP): Lock still succeeds and returns within
// the per-node budget. Three of five: Lock fails with ErrNotObtained joined
// with per-node errors, before the caller's deadline. After SIGCONT, no lock
// key from the failed attempts is left once their TTL has passed.
func TestFrozenNodes(t *testing.T) {
	servers, clients := cluster(t, 5)
	const ttl = time.Second
	const attempt = 250 * time.Millisecond
	c := newClient(t, clients, WithTTL(ttl), WithAttemptTimeout(attempt))
	m := mustMutex(t, c, "frozen", WithLeaseTime(ttl))
	ctx := t.Context()
	resume := func() {
		for _, s := range servers {
			if s.Paused() {
				_ = s.Resume()
			}
		}
	}
	t.Cleanup(resume)

	for _, s := range servers[:2] {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	perNode := Majority.LockWaitTime(attempt, 5)
	for i := range 5 {
		start := time.Now()
		l, err := m.Lock(ctx)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("Lock %d with 2 of 5 frozen: %v", i, err)
		}
		// Generous bound: the decision needs the three live nodes only.
		if took > perNode+time.Second {
			t.Errorf("Lock %d took %v with 2 of 5 frozen; per-node budget %v", i, took, perNode)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	}

	if err := servers[2].Pause(); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := m.Lock(dctx)
	took := time.Since(start)
	if !errors.Is(err, ErrNotObtained) {
		t.Fatalf("Lock with 3 of 5 frozen: %v, want ErrNotObtained", err)
	}
	var ne *NodeError
	if !errors.As(err, &ne) {
		t.Fatalf("no per-node error in %v (%#v)", err, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the caller's deadline is not in %v", err)
	}
	if took > 2*time.Second+time.Second {
		t.Fatalf("Lock with a 2s deadline returned after %v", took)
	}
	start = time.Now()
	if _, err := m.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryLock with 3 of 5 frozen: %v", err)
	}
	if took := time.Since(start); took > attempt+time.Second {
		t.Fatalf("TryLock with 3 of 5 frozen took %v; attempt budget %v", took, attempt)
	}

	resume()
	// Resumed nodes run the commands queued while frozen; late grants of
	// failed attempts are given back or expire with their TTL.
	testutil.WaitKeyGone(t, ctx, c.nodes[0].Keys("frozen").Lock, clients...)
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock after resume: %v", err)
	}
	_ = l.Unlock(ctx)
}
