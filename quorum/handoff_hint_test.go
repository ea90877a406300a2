package quorum

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// A handle counts its live leases, and a second Lock on it while one
// lives waits and then takes the lock as usual (its first try goes
// straight to the acquire script: node.Lock.ExpectHeld).
func TestLiveLeasesHint(t *testing.T) {
	_, clients := cluster(t, 3)
	counted, tries := attempts()
	c := newClient(t, clients, counted)
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
	before := tries.Load()
	got := lockInBackground(ctx, m)
	waitAttempts(t, tries, before+2) // refused, then subscribed: it waits
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

// A waiting Lock's tries that no unlock message prompted skip the SET NX:
// the lock is probably still held, and the SET NX would cost a round trip
// before the script. The try an unlock message prompts sends it (the lock
// was just released, and this client woke only this waiter).
func TestWaiterRetriesSkipSetNX(t *testing.T) {
	servers, clients := cluster(t, 3)
	holder := newClient(t, clients)
	var sets, scripts, attempts atomic.Int64
	wclients := testutil.Clients(t, servers, func(int) redis.Hook {
		return beforeCommand(func(cmd redis.Cmder) {
			switch name := cmd.Name(); {
			case name == "set" && slices.ContainsFunc(cmd.Args(), func(a any) bool { return a == "nx" }):
				sets.Add(1)
			case strings.HasPrefix(name, "eval"):
				scripts.Add(1)
			}
		})
	})
	waiter := newClient(t, wclients, WithObserver(observerFunc(func(_ context.Context, e observe.Event) {
		if e.Op == observe.OpAttempt {
			attempts.Add(1)
		}
	})))
	ctx := t.Context()
	l1, err := mustMutex(t, holder, "skip").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := lockInBackground(ctx, mustMutexNoT(waiter, "skip"))
	waitAttempts(t, &attempts, 2) // refused, then subscribed and looked again
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
	if attempts.Load() < 3 {
		t.Fatalf("the waiter got the lock in %d attempts, want a refusal, a look after subscribing, and the woken try", attempts.Load())
	}
	if sets.Load() != 2*n {
		t.Fatalf("the waiter sent %d SET NX over %d attempts on %d nodes: want them on the first try and the woken one only", sets.Load(), attempts.Load(), n)
	}
}

// publishUnlock sends an unlock message for m's name on every node, as a
// release would, without releasing anything.
func publishUnlock(t *testing.T, m *Mutex, clients []redis.UniversalClient) {
	t.Helper()
	for i, c := range clients {
		if err := c.Publish(t.Context(), m.keys[0][i].Channel, "released").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// While a lease of the handle holds the lock (Mutex.holding), an unlock
// message does not make a waiter of the same handle try: in a hand-off
// between goroutines of one client, it is a late copy of the release that
// lease's Lock followed. The waiter still takes the lock at the real
// release, and the counts return to zero.
func TestLateUnlockMessageSkipsTry(t *testing.T) {
	servers, _ := cluster(t, 3)
	var (
		attempts, releases atomic.Int64
		m                  *Mutex
		ready              atomic.Bool
		holdingAtRelease   atomic.Int32 // when the first release was sent
	)
	// Unlock counts its lease out of holding before it sends the release,
	// whose messages wake the waiter: a release script is called with the
	// lock's key and one argument (release.lua: "evalsha sha 1 key value",
	// or fcall). A rollback adds "0" (it tells nobody): the waiter's, of a
	// try whose call to a node timed out on a loaded machine, goes out
	// while the lease holds, and is not counted. Only the first release
	// command is looked at: it goes out before any node ran the release,
	// so the waiter cannot hold yet. (A later one, to a slow node, may
	// leave after the waiter won on the others and counted its own lease
	// in.)
	clients := testutil.Clients(t, servers, func(int) redis.Hook {
		return beforeCommand(func(cmd redis.Cmder) {
			script := strings.HasPrefix(cmd.Name(), "eval") || strings.HasPrefix(cmd.Name(), "fcall")
			args := cmd.Args()
			if !ready.Load() || !script || len(args) != 5 || args[3] != any(m.keys[0][0].Lock) {
				return
			}
			if releases.Add(1) == 1 {
				holdingAtRelease.Store(m.holding.Load())
			}
		})
	})
	c := newClient(t, clients, WithObserver(observerFunc(func(_ context.Context, e observe.Event) {
		if e.Op == observe.OpAttempt {
			attempts.Add(1)
		}
	})))
	m = mustMutex(t, c, "late")
	ready.Store(true)
	ctx := t.Context()
	l1, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := lockInBackground(ctx, m)
	// The lease's Lock, the waiter's first try and its look after
	// subscribing: from then on it hears unlock messages.
	waitAttempts(t, &attempts, 3)
	before := attempts.Load()
	publishUnlock(t, m, clients)
	// What is tested is that nothing happens: no event says a message was
	// ignored, so give a try the message would prompt time to show (a
	// round trip on loopback is well under a millisecond).
	time.Sleep(100 * time.Millisecond)
	if after := attempts.Load(); after != before {
		t.Fatalf("an unlock message while a lease of the handle holds made %d tries", after-before)
	}
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(250 * time.Millisecond): // under the 500 ms retry interval: the message woke it
		t.Fatal("the waiter did not take the lock at the release")
	}
	if h, l := m.holding.Load(), m.live.Load(); h != 0 || l != 0 {
		t.Fatalf("after both unlocked: holding %d, live %d, want 0 and 0", h, l)
	}
	if releases.Load() == 0 {
		t.Fatal("no release seen")
	}
	if h := holdingAtRelease.Load(); h != 0 {
		t.Fatalf("a release was sent with holding %d: the lease must count itself out first", h)
	}
}

// A woken try that another client's lease refused marks the handle
// (wokenLost): its next woken try goes straight to the script, and a win
// clears the mark.
func TestWokenTryAfterLossSkipsSetNX(t *testing.T) {
	servers, clients := cluster(t, 3)
	holder := newClient(t, clients)
	var sets, attempts atomic.Int64
	wclients := testutil.Clients(t, servers, func(int) redis.Hook {
		return beforeCommand(func(cmd redis.Cmder) {
			if cmd.Name() == "set" && slices.ContainsFunc(cmd.Args(), func(a any) bool { return a == "nx" }) {
				sets.Add(1)
			}
		})
	})
	waiter := newClient(t, wclients, WithObserver(observerFunc(func(_ context.Context, e observe.Event) {
		if e.Op == observe.OpAttempt {
			attempts.Add(1)
		}
	})))
	ctx := t.Context()
	hm := mustMutex(t, holder, "lost")
	l1, err := hm.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wm := mustMutex(t, waiter, "lost")
	got := lockInBackground(ctx, wm)
	n := int64(len(servers))
	waitAttempts(t, &attempts, 2) // refused, then subscribed and looked again
	// A message with the lock still held: the woken try sends SET NX and
	// is refused.
	publishUnlock(t, wm, clients)
	testutil.Eventually(t, 5*time.Second, func() error {
		if sets.Load() < 2*n || !wm.wokenLost.Load() {
			return fmt.Errorf("after a refused woken try: %d SET NX (want %d), wokenLost %v", sets.Load(), 2*n, wm.wokenLost.Load())
		}
		return nil
	})
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if sets.Load() != 2*n {
		t.Fatalf("the woken try after a loss sent SET NX: %d in all, want %d", sets.Load(), 2*n)
	}
	if wm.wokenLost.Load() {
		t.Fatal("a woken try that won left wokenLost set")
	}
}

// lockInBackground takes m in a goroutine, unlocks at once, and reports
// the error of either.
func lockInBackground(ctx context.Context, m *Mutex) <-chan error {
	got := make(chan error, 1)
	go func() {
		l, err := m.Lock(ctx)
		if err == nil {
			err = l.Unlock(context.Background())
		}
		got <- err
	}()
	return got
}
