package quorum

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// A holder keeps a bare majority (nodes 0–2 of 5: its keys on 3 and 4 are
// gone, as after a partition or a restart of those two). A waiting Lock
// must not spin: each attempt takes nodes 3–4, fails the quorum and gives
// them back, and that rollback used to publish an unlock message that woke
// the waiter again (about 3,000 attempts a second). Then the holder's
// Unlock still wakes the waiter at once.
//
// The second case delays the holder's first request to node 2 by 300 ms:
// its Lock returns on a quorum of the others, and the grant on node 2 lands
// later. Taking the keys on 3 and 4 away before then left the holder with
// fewer than three nodes: the waiter took 2–4 at its first attempt, and
// the holder's Unlock failed with "lock not held on a quorum" (one CI run
// in 23, at the same 2.14 s), or, when the holder's late request landed
// after the waiter had let go, passed with two holders unseen. The test
// now waits for every node's answer first and fails on a grant before the
// release; this case fails without that wait.
func TestWaiterDoesNotSpinOnBareMajority(t *testing.T) {
	for _, slow := range []bool{false, true} {
		name := "prompt nodes"
		if slow {
			name = "holder's node 2 answers late"
		}
		t.Run(name, func(t *testing.T) { waiterOnBareMajority(t, slow) })
	}
}

func waiterOnBareMajority(t *testing.T, slowNode2 bool) {
	servers, clients := cluster(t, 5)
	holderClients := clients
	if slowNode2 {
		// Hold back the holder's first lock request (a script or a SET)
		// to node 2.
		var done atomic.Bool
		holderClients = testutil.Clients(t, servers, func(i int) redis.Hook {
			if i != 2 {
				return nil
			}
			return beforeCommand(func(cmd redis.Cmder) {
				if name := cmd.Name(); (strings.HasPrefix(name, "eval") || name == "set") && !done.Swap(true) {
					time.Sleep(300 * time.Millisecond)
				}
			})
		})
	}
	// Long budgets: the holder's Unlock must reach all three of its nodes
	// (250 ms was once too short on a loaded CI machine), and its late
	// request to node 2 must still be a grant (each node call gets a fifth
	// of the attempt timeout).
	a := newClient(t, holderClients, WithFencing(true), WithAttemptTimeout(5*time.Second), WithReleaseTimeout(5*time.Second))
	var attempts atomic.Int64
	var mu sync.Mutex
	var lastAttempt time.Time
	b := newClient(t, clients, WithFencing(true), WithRetryInterval(time.Minute),
		WithObserver(observerFunc(func(_ context.Context, e observe.Event) {
			if e.Op == observe.OpAttempt {
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
	// Every node's answer first: the holder must have 0–2 when 3 and 4 go.
	for i, v := range waitAnswered(t, lease, 0, 1, 2, 3, 4) {
		if !v.Granted {
			t.Fatalf("node %d did not grant the uncontended lock: %s (%v)", i, lease.Report(), v.Err)
		}
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
	if gap < 0 {
		t.Fatalf("the waiter got the lock %v before the holder released it: two holders", -gap)
	}
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
