package quorum

import (
	"context"
	"errors"
	"fmt"
	"github.com/quorumlock/quorumlock/quorum/admin"
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/multilock"
)

// leftover writes lock name for owner on the given nodes only, as a timed-out
// or half rolled-back attempt leaves it (a resumed node runs the acquire that
// was queued on its socket).
func leftover(t *testing.T, c *Client, name, owner string, ttl time.Duration, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		ok, _, _, err := c.nodes[i].Lock(name, owner, "stale-attempt", true).Acquire(t.Context(), ttl)
		if !ok || err != nil {
			t.Fatalf("leftover on node %d: %v %v", i, ok, err)
		}
	}
}

func resumeAll(servers []*localredis.Server) {
	for _, s := range servers {
		if s.Paused() {
			_ = s.Resume()
		}
	}
}

// Five real nodes: a held lock, a lock on a minority only, a free name, and
// the same with nodes that do not answer.
func TestInspectVerdicts(t *testing.T) {
	servers, clients := cluster(t, 5)
	c := newClient(t, clients, WithTTL(5*time.Second), WithFencing(true))
	ctx := t.Context()
	t.Cleanup(func() { resumeAll(servers) })

	// The All policy makes every node hold alice's lock (a Majority grant
	// stops at 3), so which node is frozen below does not matter.
	lease, err := mustMutex(t, newClient(t, clients, WithTTL(5*time.Second), WithFencing(true), WithPolicy(All)), "jobs/held", WithOwner("alice")).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(context.Background())
	leftover(t, c, "jobs/stale", "ghost", 5*time.Second, 3, 4)
	leftover(t, c, "jobs/stale1", "ghost", 5*time.Second, 4)

	type want struct {
		verdict  admin.Verdict
		holders  []string
		answered int
	}
	check := func(t *testing.T, ins admin.Inspection, w want) {
		t.Helper()
		if ins.Verdict != w.verdict || !slices.Equal(ins.Holders, w.holders) || ins.Answered != w.answered || ins.Quorum != 3 || len(ins.Nodes) != 5 {
			t.Fatalf("%s: verdict %q holders %q answered %d quorum %d, want %q %q %d 3",
				ins.Name, ins.Verdict, ins.Holders, ins.Answered, ins.Quorum, w.verdict, w.holders, w.answered)
		}
		for i, ns := range ins.Nodes {
			if ns.Node != c.nodes[i].Name() {
				t.Fatalf("node %d named %q, want %q", i, ns.Node, c.nodes[i].Name())
			}
		}
	}

	t.Run("all nodes answer", func(t *testing.T) {
		held, _ := c.Admin().Inspect(ctx, "jobs/held")
		check(t, held, want{admin.HeldByQuorum, []string{"alice"}, 5})
		if held.TTL <= 0 || held.TTL > 5*time.Second || held.Fence < 1 || held.Fence != lease.Token() {
			t.Fatalf("held: ttl %v fence %d (token %d)", held.TTL, held.Fence, lease.Token())
		}
		present := 0
		for _, ns := range held.Nodes {
			if !ns.Answered() {
				t.Fatalf("%s did not answer: %v", ns.Node, ns.Err)
			}
			if ns.Present {
				present++
				if ns.Holders["alice"] != 1 || len(ns.Holders) != 1 || ns.TTL <= 0 || ns.Fence < 1 {
					t.Fatalf("held on %s: %+v", ns.Node, ns)
				}
			}
		}
		if present != 5 {
			t.Fatalf("held on %d nodes", present)
		}

		stale, _ := c.Admin().Inspect(ctx, "jobs/stale")
		check(t, stale, want{admin.MinorityOnly, nil, 5})
		if stale.TTL <= 0 {
			t.Fatalf("stale: leftovers' TTL %v", stale.TTL)
		}
		for i, ns := range stale.Nodes {
			if ns.Present != (i == 3 || i == 4) || (ns.Present && ns.Holders["ghost"] != 1) {
				t.Fatalf("stale on node %d: %+v", i, ns)
			}
		}

		free, _ := c.Admin().Inspect(ctx, "jobs/none")
		check(t, free, want{admin.Free, nil, 5})
		if free.TTL != 0 || free.Forced != nil {
			t.Fatalf("free: %+v", free)
		}

		list, err := c.Admin().List(ctx, "jobs/*")
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 3 || list[0].Name != "jobs/held" || list[0].Verdict != admin.HeldByQuorum ||
			list[1].Name != "jobs/stale" || list[1].Verdict != admin.MinorityOnly || list[2].Name != "jobs/stale1" || list[2].Verdict != admin.MinorityOnly {
			t.Fatalf("List: %+v", list)
		}
		if l, _ := c.Admin().List(ctx, "other/*"); len(l) != 0 {
			t.Fatalf("List(other/*) = %+v", l)
		}
	})

	t.Run("one node does not answer", func(t *testing.T) {
		if err := servers[0].Pause(); err != nil {
			t.Fatal(err)
		}
		defer servers[0].Resume()
		list, err := c.Admin().List(ctx, "")
		var ne *multilock.NodeError // package admin reports nodes with the core's type
		if !errors.As(err, &ne) || ne.Node != c.nodes[0].Name() {
			t.Fatalf("List error %v, want a NodeError for %s", err, c.nodes[0].Name())
		}
		if len(list) != 3 {
			t.Fatalf("List with a node frozen: %+v", list)
		}
		check(t, list[0], want{admin.HeldByQuorum, []string{"alice"}, 4})
		// ghost holds 2 nodes: with the silent one it could have 3.
		check(t, list[1], want{admin.Unknown, nil, 4})
		check(t, list[2], want{admin.MinorityOnly, nil, 4})
		if list[0].Nodes[0].Err == nil || list[0].Nodes[0].Answered() {
			t.Fatal("frozen node reported as answering")
		}
		free, _ := c.Admin().Inspect(ctx, "jobs/none")
		check(t, free, want{admin.Free, nil, 4})
	})

	t.Run("three nodes do not answer", func(t *testing.T) {
		for _, s := range servers[2:] {
			if err := s.Pause(); err != nil {
				t.Fatal(err)
			}
		}
		defer resumeAll(servers)
		// Two nodes say alice, three are silent: it may be held, or not.
		held, _ := c.Admin().Inspect(ctx, "jobs/held")
		check(t, held, want{admin.Unknown, nil, 2})
		free, _ := c.Admin().Inspect(ctx, "jobs/none")
		check(t, free, want{admin.Unknown, nil, 2})
	})
}

// ForceUnlock records who did it; a later Inspect shows the record, List no
// longer lists the name, and the fencing counter stays.
func TestForceUnlockIsRecorded(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients, WithFencing(true))
	ctx := t.Context()
	// Lock and TryLock return at a quorum of grants and give up on slower
	// nodes; the All policy makes every node hold it, so counts are exact.
	lease, err := mustMutex(t, newClient(t, clients, WithFencing(true), WithPolicy(All)), "rec").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().ForceUnlock(ctx, "rec", ""); err == nil {
		t.Fatal("ForceUnlock without who does it succeeded")
	}
	before := time.Now().Add(-time.Second)
	n, err := c.Admin().ForceUnlock(ctx, "rec", "ops:alice")
	if err != nil || n != 3 {
		t.Fatalf("ForceUnlock = %d, %v; want 3 nodes", n, err)
	}
	ins, _ := c.Admin().Inspect(ctx, "rec")
	if ins.Verdict != admin.Free || ins.Forced == nil || ins.Forced.By != "ops:alice" || ins.Forced.At.Before(before) || !ins.Forced.Removed || ins.Fence != lease.Token() {
		t.Fatalf("after force: %+v forced %+v", ins, ins.Forced)
	}
	if l, err := c.Admin().List(ctx, "*"); err != nil || len(l) != 0 {
		t.Fatalf("List after force: %+v %v", l, err)
	}
	if err := lease.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Unlock of a forced lease: %v, want ErrNotHeld", err)
	}
}

// A waiter blocked in Lock wakes as soon as an operator forces the lock,
// not at the holder's TTL or its own retry interval (both far away here).
func TestForceUnlockWakesWaiter(t *testing.T) {
	_, clients := cluster(t, 5)
	const ttl = 20 * time.Second
	holder := newClient(t, clients, WithTTL(ttl))
	counted, tries := attempts()
	waiter := newClient(t, clients, WithTTL(ttl), WithRetryInterval(ttl), counted)
	ctx := t.Context()
	held, err := mustMutex(t, holder, "wake").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(context.Background())

	got := make(chan error, 1)
	var won *Lease
	bob := mustMutex(t, waiter, "wake", WithOwner("bob"))
	go func() {
		l, err := bob.Lock(ctx)
		won = l
		got <- err
	}()
	// Wait until the waiter listens on every node and its try after
	// subscribing is done: a force during that try would leave it waiting
	// for its retry interval.
	waitAttempts(t, tries, 2)
	start := time.Now()
	if _, err := holder.Admin().ForceUnlock(ctx, "wake", "ops"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		defer won.Unlock(context.Background())
		// Generous: the alternatives are the TTL and the retry interval (20 s).
		if took > 3*time.Second {
			t.Fatalf("waiter took %v after the force-unlock", took)
		}
		t.Logf("waiter acquired %v after the force-unlock", took)
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken by the force-unlock")
	}
	ins, _ := holder.Admin().Inspect(ctx, "wake")
	if ins.Verdict != admin.HeldByQuorum || !slices.Equal(ins.Holders, []string{"bob"}) || ins.Forced == nil || ins.Forced.By != "ops" {
		t.Fatalf("after hand-over: %+v forced %+v", ins, ins.Forced)
	}
}

// A force reaches the nodes one by one. Had it woken waiters as it went, or
// let them in on nodes already forced, a waiter could win those and lose the
// ones forced after, and think it holds the lock. Measured here, rounds where
// the waiter ended below a quorum: plain delete-and-wake per node, 2 to 3 of
// 30; tombstones removed right after the first step, 2 of about 320 (an
// attempt under way when the force began straddled it); tombstones kept for
// the attempt timeout (ForceUnlock), 0 of 300.
func TestForceUnlockKeepsNewGrants(t *testing.T) {
	_, clients := cluster(t, 5)
	const ttl = 20 * time.Second
	ops := newClient(t, clients, WithTTL(ttl))
	waiter := newClient(t, clients, WithTTL(ttl), WithRetryInterval(ttl))
	ctx := t.Context()
	for r := range 10 {
		name := fmt.Sprint("handover-", r)
		// The holder won 3 of 5 nodes: a Majority grant need not reach all.
		leftover(t, ops, name, "holder", ttl, 0, 1, 2)
		got := make(chan *Lease, 1)
		bob := mustMutex(t, waiter, name, WithOwner("bob"))
		go func() {
			l, err := bob.Lock(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		waitSubscribed(t, clients, ops.nodes[0].Keys(name).Channel)
		if _, err := ops.Admin().ForceUnlock(ctx, name, "ops"); err != nil {
			t.Fatal(err)
		}
		l := <-got
		if l == nil {
			t.FailNow()
		}
		ins, _ := ops.Admin().Inspect(ctx, name)
		if ins.Verdict != admin.HeldByQuorum || !slices.Equal(ins.Holders, []string{"bob"}) {
			for _, ns := range ins.Nodes {
				t.Logf("%s: present %v, holders %v", ns.Node, ns.Present, ns.Holders)
			}
			t.Fatalf("round %d: after the force the waiter holds %q (%s); it was told it holds the lock", r, ins.Holders, ins.Verdict)
		}
		_ = l.Unlock(ctx)
	}
}
