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
)

// tenure is one holder's time inside the lock.
type tenure struct {
	worker     int
	start, end time.Time
}

func overlaps(ts []tenure) int {
	n := 0
	for i := range ts {
		for j := i + 1; j < len(ts); j++ {
			if ts[i].start.Before(ts[j].end) && ts[j].start.Before(ts[i].end) {
				n++
			}
		}
	}
	return n
}

// Five nodes, 16 goroutines × 200 Lock/Unlock on one name, each doing a
// non-atomic read-sleep-write of a shared counter: the counter ends exact and
// no two tenures overlap.
func TestMutualExclusionFiveNodes(t *testing.T) {
	_, clients := cluster(t, 5)
	// Generous budgets: under -race on a loaded 2-core machine a node can
	// take far longer than the 50 ms default share; this test is about
	// exclusion, not latency.
	c := newClient(t, clients, WithAttemptTimeout(2*time.Second), WithReleaseTimeout(2*time.Second))
	checkExclusion(t, mustMutex(t, c, "counter"), 16, 200, 4*time.Minute,
		func(w int) time.Duration { return time.Duration(w%3) * 50 * time.Microsecond })
}

// holdPastTTL locks m with the watchdog, holds it for 3×ttl, and fails the
// test unless the lease still holds and nobody else can take the lock.
func holdPastTTL(t *testing.T, m *Mutex, ttl time.Duration) *Lease {
	t.Helper()
	l, err := m.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl) // time passing is the test: the watchdog must renew across three TTLs
	if err := l.Err(); err != nil {
		t.Fatalf("lease ended under the watchdog: %v", err)
	}
	if _, err := m.TryLock(t.Context()); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("lock free after 3×TTL under the watchdog: %v", err)
	}
	return l
}

// checkExclusion runs workers × rounds Lock/Unlock on m, each doing a
// non-atomic read-work-write of a shared counter, and fails the test unless
// the counter ends exact and no two tenures overlap.
func checkExclusion(t *testing.T, m *Mutex, workers, rounds int, limit time.Duration, work func(w int) time.Duration) {
	t.Helper()
	var (
		counter int // deliberately not atomic: the lock protects it
		mu      sync.Mutex
		tenures []tenure
		wg      sync.WaitGroup
		failed  atomic.Int64
	)
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				lease, err := m.Lock(ctx)
				if err != nil {
					failed.Add(1)
					t.Errorf("worker %d: Lock: %v", w, err)
					return
				}
				start := time.Now()
				v := counter
				time.Sleep(work(w)) // the holder's work: two holders at once would lose an increment
				counter = v + 1
				end := time.Now()
				mu.Lock()
				tenures = append(tenures, tenure{w, start, end})
				mu.Unlock()
				if err := lease.Unlock(ctx); err != nil {
					t.Errorf("worker %d: Unlock: %v", w, err)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.FailNow()
	}
	if counter != workers*rounds {
		t.Fatalf("counter = %d, want %d: updates were lost", counter, workers*rounds)
	}
	if n := overlaps(tenures); n != 0 {
		t.Fatalf("%d overlapping tenures", n)
	}
}

func TestTryLockHeldElsewhere(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients)
	m := mustMutex(t, c, "x")
	ctx := t.Context()
	l1, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.TryLock(ctx)
	if !errors.Is(err, ErrNotObtained) {
		t.Fatalf("second TryLock: %v, want ErrNotObtained", err)
	}
	var ne *NodeError
	if !errors.As(err, &ne) {
		t.Fatalf("no per-node error in %v", err)
	}
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := m.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	_ = l2.Unlock(ctx)
}

func TestLockCancelledReportsContext(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients)
	m := mustMutex(t, c, "x")
	l1, err := m.TryLock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Unlock(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = m.Lock(ctx)
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock on a held lock with a deadline: %v; want ErrNotObtained and DeadlineExceeded", err)
	}
}

// A waiter blocked in Lock is woken by the unlock message, well before its
// fallback retry interval.
func TestLockWokenByUnlock(t *testing.T) {
	_, clients := cluster(t, 3)
	counted, tries := attempts()
	c := newClient(t, clients, WithRetryInterval(time.Minute), counted)
	m := mustMutex(t, c, "wake")
	ctx := t.Context()
	l1, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Lease)
	go func() {
		l, err := m.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitAttempts(t, tries, 3) // the TryLock, the waiter's first try and its look after subscribing
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-got:
		if l != nil {
			_ = l.Unlock(ctx)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("waiter was not woken by the unlock message (fallback is a minute)")
	}
}

func TestReentrancyCounts(t *testing.T) {
	servers, clients := cluster(t, 3)
	c := newClient(t, clients, WithPolicy(All)) // every node answers before Inspect
	ctx := t.Context()
	a := mustMutex(t, c, "re", WithOwner("worker-a"))
	b := mustMutex(t, c, "re", WithOwner("worker-b"))
	l1, err := a.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := a.TryLock(ctx)
	if err != nil {
		t.Fatalf("reentrant TryLock by the same owner: %v", err)
	}
	st, err := c.nodes[0].Inspect(ctx, "re")
	if err != nil || st.Holders["worker-a"] != 2 {
		t.Fatalf("hold count on node 0 = %v (%v), want 2", st.Holders, err)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("other owner got a reentrant lock: %v", err)
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("lock freed after one of two unlocks: %v", err)
	}
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := b.TryLock(ctx)
	if err != nil {
		t.Fatalf("lock not free after both unlocks: %v", err)
	}
	_ = lb.Unlock(ctx)
	for i, s := range servers {
		rc := s.Client()
		n, _ := rc.Exists(ctx, c.nodes[i].Keys("re").Lock).Result()
		rc.Close()
		if n != 0 {
			t.Fatalf("lock key left on node %d", i)
		}
	}
}

// A holder whose lease expired cannot unlock or extend the next holder's lock.
func TestNonOwnerCannotUnlockOrExtend(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients)
	ctx := t.Context()
	m := mustMutex(t, c, "own", WithLeaseTime(300*time.Millisecond))
	old, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("fixed lease did not end")
	}
	if !errors.Is(old.Err(), ErrLeaseExpired) {
		t.Fatalf("Err = %v, want ErrLeaseExpired", old.Err())
	}
	// Expiry frees the lock: another acquisition gets it.
	var cur *Lease
	deadline := time.Now().Add(5 * time.Second)
	for cur == nil {
		cur, err = m.TryLock(ctx)
		if err != nil && time.Now().After(deadline) {
			ins, _ := c.Admin().Inspect(ctx, "own") // who holds it, for how long (a rare CI failure)
			t.Fatalf("lock not free after expiry: %v\n%+v", err, ins)
		}
		time.Sleep(20 * time.Millisecond) // poll: the TTL runs out on each node's own clock
	}
	if err := old.Extend(ctx); err == nil {
		t.Fatal("expired lease extended")
	}
	if err := old.Unlock(ctx); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("Unlock of an expired lease: %v, want ErrLeaseExpired", err)
	}
	if _, err := m.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("old holder's Unlock freed the new holder's lock: %v", err)
	}
	if err := cur.Extend(ctx); err != nil {
		t.Fatalf("current holder cannot extend: %v", err)
	}
	_ = cur.Unlock(ctx)
}

// The watchdog keeps a lock far past its TTL; when the nodes become
// unreachable the lease reports loss within its validity.
func TestWatchdogHoldsAndReportsLoss(t *testing.T) {
	servers, clients := cluster(t, 3)
	const ttl = 600 * time.Millisecond
	c := newClient(t, clients, WithTTL(ttl))
	ctx := t.Context()
	l := holdPastTTL(t, mustMutex(t, c, "wd"), ttl)
	for _, s := range servers {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, s := range servers {
			_ = s.Resume()
		}
	}()
	frozeAt := time.Now()
	until := l.Until()
	select {
	case <-l.Done():
	case <-time.After(5 * ttl):
		t.Fatal("lease not reported lost after the nodes froze")
	}
	lostAt := time.Now()
	if !errors.Is(l.Err(), ErrLeaseLost) {
		t.Fatalf("Err = %v, want ErrLeaseLost", l.Err())
	}
	// Lost is reported no later than the validity end (plus scheduling slack).
	if lostAt.After(until.Add(100*time.Millisecond)) || lostAt.Before(frozeAt) {
		t.Fatalf("lost at %v after freeze; validity ended %v after freeze", lostAt.Sub(frozeAt), until.Sub(frozeAt))
	}
	for _, s := range servers {
		_ = s.Resume()
	}
	if err := l.Unlock(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Unlock after loss: %v, want ErrLeaseLost", err)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	b := redis.NewClient(&redis.Options{Addr: "127.0.0.1:2", ContextTimeoutEnabled: true})
	same := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	t.Cleanup(func() { a.Close(); b.Close(); same.Close() })
	tests := []struct {
		name    string
		clients []redis.UniversalClient
		opts    []Option
		want    string
	}{
		{"no nodes", nil, nil, "no nodes"},
		{"nil client", []redis.UniversalClient{a, nil}, nil, "nil redis client"},
		{"same client twice", []redis.UniversalClient{a, a}, nil, "same client"},
		{"same address twice", []redis.UniversalClient{a, same}, nil, "both point at"},
		{"zero ttl", []redis.UniversalClient{a}, []Option{WithTTL(0)}, "ttl"},
		{"negative ttl", []redis.UniversalClient{a}, []Option{WithTTL(-time.Second)}, "ttl"},
		{"ttl within drift", []redis.UniversalClient{a}, []Option{WithTTL(2 * time.Millisecond)}, "drift allowance"},
		{"bad drift factor", []redis.UniversalClient{a}, []Option{WithDriftFactor(1.5)}, "factor"},
		{"nil policy", []redis.UniversalClient{a}, []Option{WithPolicy(nil)}, "WithPolicy(nil)"},
		{"zero attempt timeout", []redis.UniversalClient{a}, []Option{WithAttemptTimeout(0)}, "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.clients, tt.opts...)
			if err == nil {
				c.Close()
				t.Fatalf("New accepted %s", tt.name)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
	c, err := New([]redis.UniversalClient{a, b})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, bad := range []struct {
		name  string
		lname string
		opts  []Option
		want  string
	}{
		{"empty name", "", nil, "empty lock name"},
		{"negative lease", "x", []Option{WithLeaseTime(-time.Second)}, "WithLeaseTime(-1s)"},
		{"lease within drift", "x", []Option{WithLeaseTime(time.Millisecond)}, "drift allowance"},
		{"NUL owner", "x", []Option{WithOwner("a\x00b")}, "NUL"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if _, err := c.Mutex(bad.lname, bad.opts...); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Fatalf("Mutex(%q): %v, want error mentioning %q", bad.lname, err, bad.want)
			}
		})
	}
	if _, err := c.MutexAll([]string{"a", "a"}); err == nil {
		t.Fatal("MutexAll accepted a name twice")
	}
	if _, err := c.MutexAll(nil); err == nil {
		t.Fatal("MutexAll accepted no names")
	}
}
