package quorum

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// nodeKeys is every key on the nodes (SCAN, whatever its prefix) with its
// PTTL, as "node/key" → PTTL; -1 is a key without expiry.
func nodeKeys(t *testing.T, clients []redis.UniversalClient) map[string]time.Duration {
	t.Helper()
	ctx := context.Background()
	out := map[string]time.Duration{}
	for i, c := range clients {
		iter := c.Scan(ctx, 0, "*", 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			pt, err := c.PTTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if pt == -2 { // gone since the scan (expired)
				continue
			}
			// go-redis answers -1 and -2 as Durations of that many ns.
			if pt < 0 {
				pt = -1
			}
			out[fmt.Sprintf("%d/%s", i, k)] = pt
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// noKeyWithoutTTL fails the test for every key on the nodes without an
// expiry (PTTL -1): a lock whose holder dies must leave nothing behind for
// ever, counters included.
func noKeyWithoutTTL(t *testing.T, clients []redis.UniversalClient, after string) {
	t.Helper()
	var bad []string
	for k, pt := range nodeKeys(t, clients) {
		if pt == -1 {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("after %s: keys without a TTL: %q", after, bad)
	}
}

// boundedCounters are the only keys a closed client leaves on the nodes:
// the fencing counter (terms of an election are its tokens) and the fair
// lock's ticket counter, each kept for the fencing retention after its last
// use. A fair lock's line (its queue and deadlines zsets) stays as long as
// a waiter's tombstone, one queue timeout.
var boundedCounters = []string{"}:fence", "}:ticket"}

func isBoundedCounter(key string) bool {
	for _, s := range boundedCounters {
		if strings.HasSuffix(key, s) {
			return true
		}
	}
	return false
}

// Every lock kind's whole life (acquire, contend, renew, release) and
// Close leave no key without a TTL on any node; after Close only the
// bounded counters remain, with at most the fencing retention to live.
func TestNothingLeftBehind(t *testing.T) {
	_, clients := cluster(t, 3)
	const retention = 2 * time.Hour
	ttl := 2 * time.Second
	newC := func(opts ...Option) *Client {
		c, err := New(clients, append([]Option{WithTTL(ttl), WithFenceRetention(retention)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := newC(), newC()
	unfenced := newC(WithFencing(false))
	ctx := t.Context()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// contend holds the lock with hold, starts wait in the background, gives
	// the hold back and waits for wait to get the lock, then gives it back.
	contend := func(what string, hold, wait func(context.Context) (*Lease, error)) {
		t.Helper()
		first, err := hold(ctx)
		must(what+": first", err)
		got := make(chan *Lease, 1)
		errc := make(chan error, 1)
		go func() {
			l, err := wait(ctx)
			if err != nil {
				errc <- err
				return
			}
			got <- l
		}()
		// Let the waiter queue, so that the hand-off is tested. No one
		// signal fits every kind (a Mutex waiter's subscription may be
		// an earlier Lock's, a fair waiter listens on its own channel);
		// the checks hold either way.
		time.Sleep(100 * time.Millisecond)
		must(what+": unlock first", first.Unlock(ctx))
		select {
		case l := <-got:
			must(what+": unlock second", l.Unlock(ctx))
		case err := <-errc:
			t.Fatalf("%s: waiter: %v", what, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: waiter never got the lock", what)
		}
		noKeyWithoutTTL(t, clients, what)
	}

	mutex := func(c *Client, name string) *Mutex { return mustMutex(t, c, name) }
	contend("Mutex (unfenced)", mutex(unfenced, "plain").Lock, mutex(unfenced, "plain").Lock)
	contend("Mutex (fenced)", mutex(a, "fenced").Lock, mutex(b, "fenced").Lock)
	// A reentrant hold and a renewal by Extend.
	l, err := mustMutex(t, a, "reentrant", WithOwner("me")).Lock(ctx)
	must("reentrant", err)
	l2, err := mustMutex(t, a, "reentrant", WithOwner("me")).Lock(ctx)
	must("reentrant again", err)
	must("extend", l.Extend(ctx))
	must("unlock inner", l2.Unlock(ctx))
	must("unlock outer", l.Unlock(ctx))
	noKeyWithoutTTL(t, clients, "a reentrant Mutex")

	rwA, err := a.RWMutex("rw")
	must("RWMutex", err)
	rwB, err := b.RWMutex("rw")
	must("RWMutex", err)
	contend("RWMutex read then write", rwA.RLock, rwB.Lock)
	contend("RWMutex write then read", rwA.Lock, rwB.RLock)

	fa, err := a.FairMutex("fair")
	must("FairMutex", err)
	fb, err := b.FairMutex("fair")
	must("FairMutex", err)
	contend("FairMutex", fa.Lock, fb.Lock)
	lt, err := fa.TryLock(ctx)
	must("FairMutex TryLock", err)
	must("FairMutex unlock", lt.Unlock(ctx))
	noKeyWithoutTTL(t, clients, "FairMutex TryLock")

	allA, err := a.MutexAll([]string{"all/1", "all/2"})
	must("MutexAll", err)
	allB, err := b.MutexAll([]string{"all/2", "all/1"})
	must("MutexAll", err)
	contend("MutexAll", allA.Lock, allB.Lock)

	e, err := a.Election("leader")
	must("Election", err)
	term, err := e.Campaign(ctx, "one")
	must("Campaign", err)
	must("Proclaim", term.Proclaim(ctx, "two"))
	if _, err := e.Leader(ctx); err != nil {
		t.Fatalf("Leader: %v", err)
	}
	must("Unlock", term.Unlock(ctx))
	noKeyWithoutTTL(t, clients, "an election's campaign, proclaim and resign")
	// A term that Close ends.
	_, err = e.Campaign(ctx, "three")
	must("Campaign", err)
	// A lease that Close ends.
	_, err = mustMutex(t, b, "held at close").Lock(ctx)
	must("held at close", err)

	for _, c := range []*Client{a, b, unfenced} {
		must("Close", c.Close())
	}
	noKeyWithoutTTL(t, clients, "Close")
	var left []string
	for k, pt := range nodeKeys(t, clients) {
		switch {
		case isBoundedCounter(k):
			if pt > retention {
				t.Errorf("after Close: %s lives %v, more than the retention %v", k, pt, retention)
			}
		case strings.HasSuffix(k, "}:queue") || strings.HasSuffix(k, "}:queue:deadlines"):
			// The fair line's tombstones, for one queue timeout.
			if pt > time.Minute {
				t.Errorf("after Close: %s lives %v, longer than a line's tombstones", k, pt)
			}
		default:
			left = append(left, k)
		}
	}
	sort.Strings(left)
	if len(left) > 0 {
		t.Errorf("after Close: keys other than the bounded counters: %q", left)
	}
}
