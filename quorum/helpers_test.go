package quorum

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/leakcheck"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// cluster starts n independent redis-server processes and returns them with
// one client each; everything is stopped in t.Cleanup.
func cluster(t *testing.T, n int) ([]*localredis.Server, []redis.UniversalClient) {
	t.Helper()
	return testutil.Servers(t, n, localredis.Config{})
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

func mustMutex(t *testing.T, c *Client, name string, opts ...Option) *Mutex {
	t.Helper()
	m, err := c.Mutex(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// observerFunc adapts a function to Observer.
type observerFunc func(ctx context.Context, e observe.Event)

func (f observerFunc) Observe(ctx context.Context, e observe.Event) { f(ctx, e) }

// attempts returns an option that counts the client's decided lock
// attempts (OpAttempt), and the count.
func attempts() (Option, *atomic.Int64) {
	n := new(atomic.Int64)
	return WithObserver(observerFunc(func(_ context.Context, e observe.Event) {
		if e.Op == observe.OpAttempt {
			n.Add(1)
		}
	})), n
}

// waitAttempts waits (at most 10 s, else fails t) until n counts at least
// want attempts. A waiter's second attempt is its look after subscribing
// (Mutex.Lock): once it is decided, the waiter hears an unlock message, so
// a test that unlocks to wake it waits here instead of sleeping.
func waitAttempts(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); n.Load() < want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d lock attempts after 10 s, want %d", n.Load(), want)
		}
	}
}

// waitSubscribed waits (at most 10 s, else fails t) until someone listens
// on channel on every node: a waiter that subscribed hears the next unlock
// message.
func waitSubscribed(t *testing.T, clients []redis.UniversalClient, channel string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		for i, c := range clients {
			if n := c.PubSubNumSub(t.Context(), channel).Val()[channel]; n < 1 {
				return fmt.Errorf("nobody listens on %s on node %d", channel, i)
			}
		}
		return nil
	})
}

// waitAnswered waits (at most 10 s, else fails t) until nodes idx have
// answered the lease's attempt, and returns its votes. Lock returns once a
// quorum granted; the other nodes' answers land later (a late grant counts
// for the lease). A test that then takes a node's key away, or counts on
// which nodes the holder has, waits here first.
func waitAnswered(t *testing.T, l *Lease, idx ...int) []observe.Vote {
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

// beforeCommand is a go-redis hook that calls f with every command (those
// of a pipeline too) before it is sent.
type beforeCommand func(cmd redis.Cmder)

func (f beforeCommand) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f beforeCommand) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f(cmd)
		return next(ctx, cmd)
	}
}

func (f beforeCommand) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			f(c)
		}
		return next(ctx, cmds)
	}
}
