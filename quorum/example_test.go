package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/guard"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// startNodes starts n local redis-server processes for an example and
// returns one go-redis client per node (with the settings a lock needs) and
// a function that stops everything. In production the clients point at
// independent Redis deployments: quorum.Dial("redis://a:6379,redis://b:6379,...").
func startNodes(n int) ([]*localredis.Server, []redis.UniversalClient, func()) {
	servers, err := localredis.StartN(context.Background(), n, localredis.Config{})
	if err != nil {
		log.Fatal(err)
	}
	clients := make([]redis.UniversalClient, n)
	for i, s := range servers {
		clients[i] = s.Client()
	}
	return servers, clients, func() {
		for _, c := range clients {
			c.Close()
		}
		localredis.StopAll(servers)
	}
}

// A Mutex on a quorum of three nodes: Lock waits until the lock is free (a
// waiter is woken by the holder's unlock message), and the lease it returns
// is renewed by a watchdog until Unlock.
func ExampleMutex_Lock() {
	_, nodes, stop := startNodes(3)
	defer stop()
	ctx := context.Background()

	client, err := quorum.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, err := client.Mutex("invoice/42")
	if err != nil {
		log.Fatal(err)
	}

	lease, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", lease.Report().Name)
	// ... the critical section ...
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("released")
	// Output:
	// holding invoice/42
	// released
}

// TryLock never waits; Lock waits at most as long as its context allows.
// Both report ErrNotObtained (with each node's answer) when the lock is
// held elsewhere, and a cancelled wait also carries the context's error.
func ExampleMutex_TryLock() {
	_, nodes, stop := startNodes(3)
	defer stop()
	ctx := context.Background()
	client, err := quorum.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, _ := client.Mutex("report/daily")

	holder, err := m.TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer holder.Unlock(ctx)

	_, err = m.TryLock(ctx)
	fmt.Println("TryLock while held:", errors.Is(err, quorum.ErrNotObtained))

	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = m.Lock(wctx)
	fmt.Println("Lock with a 200ms deadline:", errors.Is(err, quorum.ErrNotObtained), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// TryLock while held: true
	// Lock with a 200ms deadline: true true
}

// A watchdog lease outlives its TTL for as long as the holder runs: it is
// renewed every TTL/3. Run the work under lease.Context(): it is cancelled
// if the lease is lost, so the work stops when it is no longer protected.
func ExampleLease_Context() {
	_, nodes, stop := startNodes(3)
	defer stop()
	ctx := context.Background()
	client, err := quorum.New(nodes, quorum.WithTTL(600*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, _ := client.Mutex("migration")

	lease, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	work := func(ctx context.Context) error {
		select {
		case <-time.After(1500 * time.Millisecond): // 2.5 × the TTL
			return nil
		case <-ctx.Done():
			return context.Cause(ctx) // ErrLeaseLost: stop, we are not protected
		}
	}
	err = work(lease.Context())
	fmt.Println("work finished:", err == nil, "lease still held:", lease.Err() == nil)
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after Unlock:", context.Cause(lease.Context()))
	// Output:
	// work finished: true lease still held: true
	// after Unlock: quorumlock: lease unlocked
}

// storage is a resource that takes fencing tokens: it refuses a write whose
// token is older than one it has already seen.
type storage struct {
	mu     sync.Mutex
	newest int64
	value  string
}

func (s *storage) Write(token int64, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.newest {
		return fmt.Errorf("stale token %d: %d was seen", token, s.newest)
	}
	s.newest, s.value = token, v
	return nil
}

// Fencing: a holder that stalls past its lease (a GC pause, a frozen VM)
// may still try to write after someone else got the lock. With WithFencing
// every lease carries a token that increases across holders, so the
// resource can refuse the stale write.
func ExampleWithFencing() {
	_, nodes, stop := startNodes(3)
	defer stop()
	ctx := context.Background()
	client, err := quorum.New(nodes, quorum.WithFencing(true))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	store := &storage{}

	// A holds the lock with a short fixed lease and stalls past it.
	a, _ := client.Mutex("ledger", quorum.WithLeaseTime(200*time.Millisecond))
	leaseA, err := a.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	<-leaseA.Done()

	// B gets the lock and writes.
	b, _ := client.Mutex("ledger")
	leaseB, err := b.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("B's token is newer:", leaseB.Token() > leaseA.Token())
	fmt.Println("B writes:", store.Write(leaseB.Token(), "B"))

	// A wakes up and writes with its old token: refused.
	fmt.Println("A writes late, refused:", store.Write(leaseA.Token(), "A") != nil)
	fmt.Println("value:", store.value)
	_ = leaseB.Unlock(ctx)
	// Output:
	// B's token is newer: true
	// B writes: <nil>
	// A writes late, refused: true
	// value: B
}

// MutexAll holds several resources at once, or none: here a transfer
// locks both accounts.
func ExampleClient_MutexAll() {
	_, nodes, stop := startNodes(3)
	defer stop()
	ctx := context.Background()
	client, err := quorum.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	transfer, err := client.MutexAll([]string{"account/1", "account/2"})
	if err != nil {
		log.Fatal(err)
	}
	lease, err := transfer.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// Either account alone is now held too.
	one, _ := client.Mutex("account/2")
	_, err = one.TryLock(ctx)
	fmt.Println("account/2 held by the transfer:", errors.Is(err, quorum.ErrNotObtained))
	_ = lease.Unlock(ctx)
	l, err := one.TryLock(ctx)
	fmt.Println("after Unlock:", err)
	_ = l.Unlock(ctx)
	// Output:
	// account/2 held by the transfer: true
	// after Unlock: <nil>
}

// allButOne is a custom policy: every node but one must grant, and each
// node call may use half of what is left of the attempt.
type allButOne struct{}

func (allButOne) FailedLocksLimit(n int) int { return min(1, n-1) }
func (allButOne) LockWaitTime(remaining time.Duration, n int) time.Duration {
	return max(remaining/2, time.Millisecond)
}

// A custom Policy decides how many nodes may fail and how long each node
// call may take. With three nodes allButOne needs two grants, like
// Majority; with five it needs four.
func ExampleWithPolicy() {
	servers, nodes, stop := startNodes(3)
	defer stop()
	ctx := context.Background()
	client, err := quorum.New(nodes, quorum.WithPolicy(allButOne{}))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, _ := client.Mutex("batch")

	_ = servers[0].Pause() // one node frozen
	lease, err := m.TryLock(ctx)
	fmt.Println("one node down:", err)
	_ = lease.Unlock(ctx)

	_ = servers[1].Pause() // two frozen
	_, err = m.TryLock(ctx)
	fmt.Println("two nodes down:", errors.Is(err, quorum.ErrNotObtained))
	_ = servers[0].Resume()
	_ = servers[1].Resume()
	// Output:
	// one node down: <nil>
	// two nodes down: true
}

// observerFunc adapts a function to observe.Observer.
type observerFunc func(ctx context.Context, e observe.Event)

func (f observerFunc) Observe(ctx context.Context, e observe.Event) { f(ctx, e) }

// An Observer sees every lock operation's outcome; package otelquorum
// turns them into OpenTelemetry metrics and spans, and WithLogger logs them
// with log/slog.
func ExampleWithObserver() {
	_, nodes, stop := startNodes(3)
	defer stop()
	ctx := context.Background()
	var mu sync.Mutex
	var seen []string
	obs := observerFunc(func(_ context.Context, e observe.Event) {
		granted := 0
		for _, v := range e.Votes {
			if v.Granted {
				granted++
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if e.Op == observe.OpAttempt {
			seen = append(seen, fmt.Sprintf("%s %s: %s (%d votes)", e.Op, e.Name, e.Outcome, len(e.Votes)))
			return
		}
		seen = append(seen, fmt.Sprintf("%s %s: %s", e.Op, e.Name, e.Outcome))
	})
	client, err := quorum.New(nodes, quorum.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, _ := client.Mutex("cache/rebuild")
	lease, err := m.TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, _ = m.TryLock(ctx) // contended
	_ = lease.Unlock(ctx)

	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		fmt.Println(s)
	}
	// Output:
	// attempt cache/rebuild: ok (3 votes)
	// acquire cache/rebuild: ok
	// attempt cache/rebuild: contended (3 votes)
	// acquire cache/rebuild: contended
	// release cache/rebuild: ok
}

// A fencing guard makes the resource itself refuse a stale holder: package
// guard writes a Redis value (or an SQL row) only with a token at least as
// high as the last one it accepted. Here a holder stalls past its lease,
// the next holder writes, and the stale holder's late write is refused.
func ExampleWithFencing_guard() {
	_, nodes, stop := startNodes(4)
	defer stop()
	ctx := context.Background()
	client, err := quorum.New(nodes[:3], quorum.WithFencing(true))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	store := guard.NewRedis(nodes[3]) // the protected resource: a fourth server

	a, _ := client.Mutex("report-42", quorum.WithLeaseTime(200*time.Millisecond))
	stale, err := a.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	<-stale.Done() // A stalls past its lease

	b, _ := client.Mutex("report-42")
	fresh, err := b.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("B writes:", store.Set(ctx, "report:42", fresh.Token(), "from B", 0))
	err = store.Set(ctx, "report:42", stale.Token(), "from A", 0)
	fmt.Println("A's late write refused:", errors.Is(err, guard.ErrStale))
	_ = fresh.Unlock(ctx)
	// Output:
	// B writes: <nil>
	// A's late write refused: true
}
