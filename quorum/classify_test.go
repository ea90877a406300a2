package quorum_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// An attempt that failed only because nodes did not answer says so,
// distinctly from one refused because the lock is held.
func TestTryLockSaysUnanswered(t *testing.T) {
	servers := localredis.StartNT(t, 3, localredis.Config{})
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr())
	}
	c := dialT(t, strings.Join(addrs, ","))
	ctx := t.Context()
	m, _ := c.Mutex("unanswered")
	held, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := dialT(t, strings.Join(addrs, ","))
	om, _ := other.Mutex("unanswered")
	_, err = om.TryLock(ctx)
	if !errors.Is(err, quorum.ErrNotObtained) || errors.Is(err, quorum.ErrUnanswered) {
		t.Fatalf("held lock: %v", err)
	}
	held.Unlock(context.Background())
	// Unlock returns once a majority released: wait for the last node too,
	// or a late release leaves "held by another owner" on node 0 (seen on
	// a loaded CI run).
	testutil.WaitKeyGone(t, ctx, "quorumlock:{unanswered}", testutil.Clients(t, servers, nil)...)

	for _, s := range servers[1:] {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Resume() })
	}
	_, err = om.TryLock(ctx)
	if !errors.Is(err, quorum.ErrNotObtained) || !errors.Is(err, quorum.ErrUnanswered) ||
		!strings.HasPrefix(err.Error(), `quorumlock: lock "unanswered" not obtained: nodes did not answer in time`) {
		t.Fatalf("2 of 3 frozen: %v", err)
	}
}
