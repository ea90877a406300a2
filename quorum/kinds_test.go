package quorum

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
)

// A nodeKind makes the n nodes of a quorum out of one kind of Redis
// deployment. Every node is an independent deployment: a standalone server,
// a Redis Cluster, or a Sentinel-managed master+replica group.
type nodeKind struct {
	name  string
	nodes func(t *testing.T, n int) kindNodes
}

// kindNodes are the nodes of one kind with what the kind-specific checks
// need.
type kindNodes struct {
	clients  []redis.UniversalClient
	clusters []*localredis.Cluster // cluster kind: one per node
	sentinel *localredis.Sentinel  // sentinel kind: group i is node i
	// again returns a second client of node i (the same deployment through
	// another go-redis client), for duplicate detection.
	again func(i int) redis.UniversalClient
}

var nodeKinds = []nodeKind{
	{"standalone", standaloneNodes},
	{"cluster", clusterNodes},
	{"sentinel", sentinelNodes},
}

func closeLater(t *testing.T, c redis.UniversalClient) redis.UniversalClient {
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func standaloneNodes(t *testing.T, n int) kindNodes {
	servers, clients := cluster(t, n)
	return kindNodes{clients: clients, again: func(i int) redis.UniversalClient { return closeLater(t, servers[i].Client()) }}
}

// clusterNodes makes each node its own 3-master Redis Cluster (started in
// parallel; redis-cli --cluster create takes about a second each).
func clusterNodes(t *testing.T, n int) kindNodes {
	t.Helper()
	k := kindNodes{clusters: make([]*localredis.Cluster, n), clients: make([]redis.UniversalClient, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.clusters[i], errs[i] = localredis.StartCluster(context.Background(), 3, localredis.Config{})
		}()
	}
	wg.Wait()
	for _, c := range k.clusters {
		if c != nil {
			t.Cleanup(func() { _ = c.Stop() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		if (errors.Is(err, localredis.ErrNotInstalled) || errors.Is(err, localredis.ErrNoCLI)) && !localredis.Required() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	for i, c := range k.clusters {
		k.clients[i] = closeLater(t, c.Client())
	}
	k.again = func(i int) redis.UniversalClient { return closeLater(t, k.clusters[i].Client()) }
	return k
}

// sentinelNodes makes each node a master+replica group; three sentinels
// watch all of them.
func sentinelNodes(t *testing.T, n int) kindNodes {
	t.Helper()
	d := localredis.StartSentinelT(t, localredis.SentinelConfig{Groups: n})
	k := kindNodes{sentinel: d, clients: make([]redis.UniversalClient, n)}
	for i := range n {
		k.clients[i] = closeLater(t, d.Client(i))
	}
	k.again = func(i int) redis.UniversalClient { return k.clients[i] }
	return k
}

// kindCase is one check of the core suite, run on every kind.
type kindCase struct {
	name string
	run  func(t *testing.T, k kindNodes)
}

// TestKinds runs the core lock checks over quorums of three nodes of each
// kind: standalone servers, Redis Clusters and Sentinel groups.
func TestKinds(t *testing.T) {
	cases := []kindCase{
		{"exclusion", kindExclusion},
		{"trylock", kindTryLock},
		{"wake", kindWake},
		{"reentrant", kindReentrant},
		{"fencing", kindFencing},
		{"watchdog-and-loss", kindWatchdog},
		{"multilock", kindMutexAll},
		{"hash-slot", kindHashSlot},
		{"identity", kindIdentity},
	}
	for _, kind := range nodeKinds {
		t.Run(kind.name, func(t *testing.T) {
			start := time.Now()
			k := kind.nodes(t, 3)
			t.Logf("3 %s nodes ready in %v", kind.name, time.Since(start).Round(time.Millisecond))
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, k) })
			}
		})
	}
}

// Four workers × 15 Lock/Unlock on one name, each a non-atomic
// read-sleep-write: the counter ends exact and no tenures overlap.
func kindExclusion(t *testing.T, k kindNodes) {
	c := newClient(t, k.clients)
	checkExclusion(t, mustMutex(t, c, "kind/counter"), 4, 15, time.Minute,
		func(int) time.Duration { return 100 * time.Microsecond })
}

func kindTryLock(t *testing.T, k kindNodes) {
	c := newClient(t, k.clients)
	m := mustMutex(t, c, "kind/try")
	ctx := t.Context()
	l1, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.TryLock(ctx)
	var ne *NodeError
	if !errors.Is(err, ErrNotObtained) || !errors.As(err, &ne) {
		t.Fatalf("second TryLock: %v; want ErrNotObtained with per-node errors", err)
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

// A waiter is woken by the unlock message (pub/sub through this kind's
// client), not by its fallback retry a minute later.
func kindWake(t *testing.T, k kindNodes) {
	counted, tries := attempts()
	c := newClient(t, k.clients, WithRetryInterval(time.Minute), counted)
	m := mustMutex(t, c, "kind/wake")
	ctx := t.Context()
	l1, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Lease, 1)
	go func() {
		l, err := m.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitAttempts(t, tries, 3) // the TryLock, the waiter's first try and its look after subscribing
	unlocked := time.Now()
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-got:
		t.Logf("waiter woke %v after the unlock", time.Since(unlocked).Round(time.Microsecond))
		if l != nil {
			_ = l.Unlock(ctx)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("waiter not woken by the unlock message (fallback retry is a minute)")
	}
}

func kindReentrant(t *testing.T, k kindNodes) {
	c := newClient(t, k.clients, WithPolicy(All)) // every node answers before Inspect
	ctx := t.Context()
	a := mustMutex(t, c, "kind/re", WithOwner("worker-a"))
	b := mustMutex(t, c, "kind/re", WithOwner("worker-b"))
	l1, err := a.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := a.TryLock(ctx)
	if err != nil {
		t.Fatalf("reentrant TryLock: %v", err)
	}
	for i, n := range c.nodes {
		st, err := n.Inspect(ctx, "kind/re")
		if err != nil || st.Holders["worker-a"] != 2 {
			t.Fatalf("node %d: holders %v (%v), want worker-a twice", i, st.Holders, err)
		}
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("other owner got the lock: %v", err)
	}
	_ = l2.Unlock(ctx)
	if _, err := b.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("free after one of two unlocks: %v", err)
	}
	_ = l1.Unlock(ctx)
	lb, err := b.TryLock(ctx)
	if err != nil {
		t.Fatalf("not free after both unlocks: %v", err)
	}
	_ = lb.Unlock(ctx)
}

// Tokens strictly increase across holders from two clients.
func kindFencing(t *testing.T, k kindNodes) {
	ctx := t.Context()
	var (
		mu   sync.Mutex
		last int64
		n    int
		wg   sync.WaitGroup
	)
	for range 2 {
		c := newClient(t, k.clients, WithFencing(true))
		m := mustMutex(t, c, "kind/fenced")
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 8 {
					l, err := m.Lock(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if l.Token() <= last {
						t.Errorf("token %d after %d", l.Token(), last)
					}
					last = l.Token()
					n++
					mu.Unlock()
					_ = l.Unlock(ctx)
				}
			}()
		}
	}
	wg.Wait()
	if n != 32 || last < 32 {
		t.Fatalf("%d acquisitions, last token %d", n, last)
	}
}

// The watchdog keeps the lock past its TTL; removed under it, the lease
// reports ErrLeaseLost at its next renewal instead of carrying on.
func kindWatchdog(t *testing.T, k kindNodes) {
	const ttl = 600 * time.Millisecond
	c := newClient(t, k.clients, WithTTL(ttl))
	ctx := t.Context()
	l := holdPastTTL(t, mustMutex(t, c, "kind/wd"), ttl)
	if _, err := c.Admin().ForceUnlock(ctx, "kind/wd", "kinds test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(3 * ttl):
		t.Fatal("lease not reported lost after the lock was removed")
	}
	if !errors.Is(l.Err(), ErrLeaseLost) {
		t.Fatalf("Err = %v, want ErrLeaseLost", l.Err())
	}
	_ = l.Unlock(ctx)
}

func kindMutexAll(t *testing.T, k kindNodes) {
	c := newClient(t, k.clients)
	ctx := t.Context()
	both, err := c.MutexAll([]string{"kind/acct/1", "kind/acct/2"})
	if err != nil {
		t.Fatal(err)
	}
	one := mustMutex(t, c, "kind/acct/2")
	hold, err := one.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := both.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("MutexAll got both while one was held: %v", err)
	}
	_ = hold.Unlock(ctx)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := both.Lock(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := one.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("member free while the MutexAll holds it: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Every key of one lock is in one hash slot (CLUSTER KEYSLOT), and the lock
// lives on the master serving that slot. Other kinds have one keyspace.
func kindHashSlot(t *testing.T, k kindNodes) {
	c := newClient(t, k.clients, WithFencing(true), WithPolicy(All))
	ctx := t.Context()
	const name = "kind/slot"
	l, err := mustMutex(t, c, name).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	if k.clusters == nil {
		return
	}
	for i, cl := range k.clusters {
		keys := c.nodes[i].Keys(name)
		slot, err := cl.Slot(ctx, keys.Lock)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{keys.Fence, keys.Channel} {
			if s, _ := cl.Slot(ctx, key); s != slot {
				t.Fatalf("%s in slot %d, %s in slot %d", keys.Lock, slot, key, s)
			}
		}
		owner, err := cl.SlotOwner(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		rc := cl.Masters[owner].Client()
		n, err := rc.Exists(ctx, keys.Lock, keys.Fence).Result()
		rc.Close()
		if err != nil || n != 2 {
			t.Fatalf("cluster %d: lock and fence keys on master %d: %d (%v), want both", i, owner, n, err)
		}
	}
}

// The same deployment given twice is rejected; distinct ones are accepted.
func kindIdentity(t *testing.T, k kindNodes) {
	c, err := New([]redis.UniversalClient{k.clients[0], k.again(0)})
	if err == nil {
		c.Close()
		t.Fatal("New accepted one deployment given twice")
	}
	if !strings.Contains(err.Error(), "same client") && !strings.Contains(err.Error(), "both point at") {
		t.Fatalf("error does not say the node is given twice: %v", err)
	}
	names := map[string]bool{}
	c2 := newClient(t, k.clients)
	for _, n := range c2.nodes {
		names[n.Name()] = true
	}
	if len(names) != len(k.clients) {
		t.Fatalf("node names %v are not distinct", names)
	}
	t.Logf("node names: %v", fmt.Sprint(c2.nodes))
}
