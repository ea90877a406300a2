package node

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
)

// checkouts is how many connections the client's pool handed out so far.
func checkouts(c *redis.Client) uint32 {
	st := c.PoolStats()
	return st.Hits + st.Misses
}

// A lone caller's commands go on the lane, one connection checked out of
// the pool once; after laneIdle without a call the lane is checked out
// again (with the pool's health check), so a connection the node closed
// meanwhile is not used; Close gives the lane back to the pool.
func TestLaneKeepsOneConnection(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	n := batchedNode(t, s)
	c := n.client.(*redis.Client)
	ctx := t.Context()
	lock := func(i int) {
		t.Helper()
		l := n.Lock("lane", "owner", "a", false)
		if ok, _, _, err := l.Acquire(ctx, time.Minute); !ok || err != nil {
			t.Fatalf("call %d: acquire %v %v", i, ok, err)
		}
		if ok, err := l.Release(ctx); !ok || err != nil {
			t.Fatalf("call %d: release %v %v", i, ok, err)
		}
	}
	lock(0)
	before := checkouts(c)
	for i := range 50 {
		lock(i + 1)
	}
	if got := checkouts(c) - before; got != 0 {
		t.Errorf("100 calls of a lone caller checked out %d connections from the pool, want 0 (all on the lane)", got)
	}
	// The node closes every client connection; after laneIdle the lane is
	// not trusted and the next call checks out a healthy one.
	admin := s.Client()
	defer admin.Close()
	if err := admin.Do(ctx, "client", "kill", "type", "normal", "skipme", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(laneIdle + 20*time.Millisecond) // time passing is the test: the lane's connection idles out
	lock(51)
	if got := checkouts(c) - before; got == 0 {
		t.Error("the call after the lane was idle did not check a connection out of the pool")
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if st := c.PoolStats(); st.IdleConns != st.TotalConns {
		t.Errorf("after Close the pool has %d connections, %d idle: the lane kept one", st.TotalConns, st.IdleConns)
	}
	// Calls after Close go through the pool.
	lock(52)
	if st := c.PoolStats(); st.IdleConns != st.TotalConns {
		t.Errorf("a call after Close left a connection checked out (%d of %d idle)", st.IdleConns, st.TotalConns)
	}
}

// A caller that never pauses still gives the lane back to the pool after
// laneHold and forms it again, so go-redis sees the connection put back
// (it skips its per-command push-notification peek only for 5 s after
// that): a few checkouts per second, not one per call.
func TestLaneRotatesAfterHold(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	n := batchedNode(t, s)
	c := n.client.(*redis.Client)
	ctx := t.Context()
	call := func() {
		t.Helper()
		if _, err := batchOf(n).do(ctx, "ping"); err != nil {
			t.Fatal(err)
		}
	}
	call()
	before := checkouts(c)
	const run = 2500 * time.Millisecond // 2.5 × laneHold
	calls := 0
	for start := time.Now(); time.Since(start) < run; calls++ {
		call()
	}
	got := checkouts(c) - before
	if got < 2 || got > 6 {
		t.Errorf("%d calls over %v checked out %d connections from the pool, want 2–6 (the lane formed again about once per %v)",
			calls, run, got, laneHold)
	}
}

// Only a standalone client with context deadlines and a pool of at least
// laneMinPool gets a lane.
func TestLaneOnlyWhereSafe(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  redis.Options
		want bool
	}{
		{"recommended", *Options("127.0.0.1:1"), true},
		{"small pool", func() redis.Options { o := *Options("127.0.0.1:1"); o.PoolSize = 2; return o }(), false},
		{"no context deadlines", redis.Options{Addr: "127.0.0.1:1"}, false},
		{"maintenance notifications", func() redis.Options { o := *Options("127.0.0.1:1"); o.MaintNotificationsConfig = nil; return o }(), false},
	} {
		c := redis.NewClient(&tc.opt)
		n, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := batchOf(n).lane.client != nil; got != tc.want {
			t.Errorf("%s: lane %v, want %v", tc.name, got, tc.want)
		}
		_ = n.Close()
		_ = c.Close()
	}
	f := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true})
	defer f.Close()
	if newLane(f, false).client != nil {
		t.Error("a Sentinel client got a lane")
	}
}
