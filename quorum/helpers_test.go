package quorum

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/leakcheck"
	"github.com/quorumlock/quorumlock/localredis"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// cluster starts n independent redis-server processes and returns them with
// one client each; everything is stopped in t.Cleanup.
func cluster(t *testing.T, n int) ([]*localredis.Server, []redis.UniversalClient) {
	t.Helper()
	return benchCluster(t, n)
}

func benchCluster(t testing.TB, n int) ([]*localredis.Server, []redis.UniversalClient) {
	t.Helper()
	servers := localredis.StartNT(t, n, localredis.Config{})
	clients := make([]redis.UniversalClient, n)
	for i, s := range servers {
		c := s.Client()
		clients[i] = c
		t.Cleanup(func() { _ = c.Close() })
	}
	return servers, clients
}

func newClient(t *testing.T, clients []redis.UniversalClient, opts ...Option) *Client {
	t.Helper()
	c, err := New(clients, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mustMutex(t *testing.T, c *Client, name string, opts ...MutexOption) *Mutex {
	t.Helper()
	m, err := c.Mutex(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// observerFunc adapts a function to Observer.
type observerFunc func(ctx context.Context, e Event)

func (f observerFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// waitAnswered waits (at most 10 s, else fails t) until nodes idx have
// answered the lease's attempt, and returns its votes. Lock returns once a
// quorum granted; the other nodes' answers land later (a late grant counts
// for the lease). A test that then takes a node's key away, or counts on
// which nodes the holder has, waits here first.
func waitAnswered(t *testing.T, l *Lease, idx ...int) []Vote {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		votes := l.Report().Votes
		all := true
		for _, i := range idx {
			all = all && votes[i].Answered
		}
		if all {
			return votes
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder's attempt on nodes %v never answered: %s", idx, l.Report())
		}
	}
}
