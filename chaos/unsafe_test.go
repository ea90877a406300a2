package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/quorum"
)

// singleNodeLock is a quorum client over one node: the single-node lock.
func singleNodeLock(t *testing.T, o *redis.Options) *quorum.Mutex {
	t.Helper()
	rc := client(t, o)
	qc, err := quorum.New([]redis.UniversalClient{rc}, quorum.WithTTL(5*time.Second), quorum.WithRestartDetection(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qc.Close() })
	m, err := qc.Mutex("orders")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func unlockAtEnd(t *testing.T, l *quorum.Lease) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = l.Unlock(ctx) // may fail: the node that granted it may be gone
	})
}

// The classic unsafety of a lock on one master with an asynchronous replica:
// after a failover, the lock is granted a second time while the first
// holder's lease is still valid. Both forms of failover show it.
func TestFailoverGrantsLockTwice(t *testing.T) {
	t.Run("manual", func(t *testing.T) {
		c := StartT(t, Topology{Groups: 1})
		ctx := bounded(t, 30*time.Second)
		g := c.Groups[0]
		old := g.Master()

		// A holds the lock on the master; while A holds it, nobody else gets
		// it there (so the test below can fail).
		a := singleNodeLock(t, old.Options())
		other := singleNodeLock(t, old.Options())
		// The link is cut before A locks: the master acknowledges A's lock
		// but the replica never receives it — the replication lag window.
		cut := &CutLink{Group: g}
		if err := cut.Inject(ctx); err != nil {
			t.Fatal(err)
		}
		la, err := a.TryLock(ctx)
		if err != nil {
			t.Fatalf("A: %v", err)
		}
		unlockAtEnd(t, la)
		if _, err := other.TryLock(ctx); !errors.Is(err, quorum.ErrNotObtained) {
			t.Fatalf("a second holder on the same master: %v, want ErrNotObtained", err)
		}
		// The master is lost; the replica is promoted.
		p := &Promote{Group: g, KeepLink: true}
		if err := p.Inject(ctx); err != nil {
			t.Fatal(err)
		}
		// B follows the group's master (the address moved with the failover).
		b := singleNodeLock(t, g.Options())
		lb, err := b.TryLock(ctx)
		if err != nil {
			t.Fatalf("B after failover: %v — the failover kept the lock (not the expected unsafety)", err)
		}
		unlockAtEnd(t, lb)
		assertOverlap(t, la, lb)
		if err := cut.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.Recover(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("sentinel", func(t *testing.T) {
		c := StartT(t, Topology{Groups: 1, Sentinels: 3})
		ctx := bounded(t, 60*time.Second)
		g := c.Groups[0]
		old := g.Master()
		f := &SentinelFailover{Group: g}
		if err := f.Inject(ctx); err != nil {
			t.Fatal(err)
		}
		// A still reaches the old master, cut off from its sentinels and
		// replica; B asks the sentinels where the master is.
		a := singleNodeLock(t, old.Options())
		la, err := a.TryLock(ctx)
		if err != nil {
			t.Fatalf("A on the isolated old master: %v", err)
		}
		unlockAtEnd(t, la)
		fo := redis.NewFailoverClient(g.FailoverOptions())
		t.Cleanup(func() { _ = fo.Close() })
		qc, err := quorum.New([]redis.UniversalClient{fo}, quorum.WithTTL(5*time.Second), quorum.WithRestartDetection(false))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = qc.Close() })
		b, err := qc.Mutex("orders")
		if err != nil {
			t.Fatal(err)
		}
		lb, err := b.TryLock(ctx)
		if err != nil {
			t.Fatalf("B through the sentinels: %v", err)
		}
		unlockAtEnd(t, lb)
		assertOverlap(t, la, lb)
		if err := f.Recover(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func assertOverlap(t *testing.T, a, b *quorum.Lease) {
	t.Helper()
	now := time.Now()
	if !a.Until().After(now) || !b.Until().After(now) {
		t.Fatalf("leases not both valid now: A until %v, B until %v", a.Until(), b.Until())
	}
	t.Logf("both granted: A valid %v more, B valid %v more",
		time.Until(a.Until()).Round(time.Millisecond), time.Until(b.Until()).Round(time.Millisecond))
}
