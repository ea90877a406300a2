package admin_test

import (
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// The tools made by hand over nodes from node.New see a lock taken over
// the same nodes, and force it off them.
func TestNewOverPublicNodes(t *testing.T) {
	ctx := t.Context()
	var nodes []*node.Node
	var subs []multilock.Locker
	for _, s := range localredis.StartNT(t, 3, localredis.Config{}) {
		rc := s.Client()
		n, err := node.New(rc, node.WithPrefix("ops:"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close(); _ = rc.Close() })
		l, err := n.Lock("batch", "alice", false)
		if err != nil {
			t.Fatal(err)
		}
		nodes, subs = append(nodes, n), append(subs, l)
	}
	// Acquire returns once a majority granted; the tracker tells when the
	// third node's call has answered too, so the force below meets all three.
	var calls sync.WaitGroup
	m, err := multilock.New(subs, multilock.WithTracker(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if granted, _, _, err := m.Acquire(ctx, 10*time.Second); !granted || err != nil {
		t.Fatalf("Acquire: %v %v", granted, err)
	}
	calls.Wait()
	if o := m.Outcomes(); !o[0].Granted || !o[1].Granted || !o[2].Granted {
		t.Fatalf("Outcomes: %+v", o)
	}
	tools := admin.New(nodes, admin.Config{Policy: multilock.Majority, TTL: 10 * time.Second, ReleaseTimeout: time.Second})
	if got := tools.Nodes(); len(got) != 3 || got[0] != nodes[0].Name() {
		t.Fatalf("Nodes() = %v", got)
	}
	in, err := tools.Inspect(ctx, "batch")
	if err != nil || in.Verdict != admin.HeldByQuorum || len(in.Holders) != 1 || in.Holders[0] != "alice" || in.Nodes[0].Holders["alice"] != 1 {
		t.Fatalf("Inspect: %v %+v", err, in)
	}
	if n, err := tools.ForceUnlock(ctx, "batch", "ops"); err != nil || n != 3 {
		t.Fatalf("ForceUnlock: %d %v", n, err)
	}
	in, err = tools.Inspect(ctx, "batch")
	if err != nil || in.Verdict != admin.Free || in.Forced == nil || in.Forced.By != "ops" {
		t.Fatalf("Inspect after ForceUnlock: %v %+v", err, in)
	}
}
