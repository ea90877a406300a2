package quorum

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// replicaGroups starts n master + replica groups and returns the masters, the
// replicas and one client per master, with every replication link up.
func replicaGroups(t *testing.T, n int) (masters, replicas []*localredis.Server, clients []redis.UniversalClient) {
	t.Helper()
	masters, clients = cluster(t, n)
	for _, m := range masters {
		replicas = append(replicas, localredis.StartT(t, localredis.Config{ReplicaOf: m.Addr()}))
	}
	for i, r := range replicas {
		// The master counts a replica for WAIT once it is online (after
		// its first acknowledgement, up to a second after the link is up):
		// wait until a write of ours is acknowledged.
		mc := masters[i].Client()
		deadline := time.Now().Add(10 * time.Second)
		for {
			pipe := mc.Pipeline()
			pipe.Set(t.Context(), "probe", 1, time.Second)
			w := pipe.Do(t.Context(), "wait", 1, 200)
			_, _ = pipe.Exec(t.Context())
			if n, _ := w.Int64(); n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %s does not acknowledge its master's writes after 10s", r.Addr())
			}
			time.Sleep(20 * time.Millisecond) // poll: the master counts the replica once it acknowledged
		}
		mc.Close()
	}
	return masters, replicas, clients
}

// WithReplicaAck: with one replica's link blocked (the replica paused), that
// node's grant is not counted and the lease report says why; the lock still
// holds on the other two. With two blocked there is no quorum, and the error
// says WAIT was not acknowledged.
func TestWaitGate(t *testing.T) {
	_, replicas, clients := replicaGroups(t, 3)
	t.Cleanup(func() {
		for _, r := range replicas {
			if r.Paused() {
				_ = r.Resume()
			}
		}
	})
	c := newClient(t, clients, WithTTL(2*time.Second), WithAttemptTimeout(time.Second), WithReplicaAck(1, 50*time.Millisecond), WithFencing(true))
	ctx := t.Context()
	// A fresh name per phase: Unlock returns once a quorum released, and a
	// release still on its way to the third node must not refuse the next
	// phase there.
	l, err := mustMutex(t, c, "all-up").TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with every replica up: %v", err)
	}
	for _, v := range l.Report().Votes {
		if v.Answered && !v.Granted {
			t.Fatalf("a vote was withheld with every replica up:\n%s", l.Report())
		}
	}
	if err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	_ = l.Unlock(ctx)

	if err := replicas[0].Pause(); err != nil {
		t.Fatal(err)
	}
	blocked := c.nodes[0].Name()
	l, err = mustMutex(t, c, "one-blocked").TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with one replica blocked: %v", err)
	}
	// The decision may come before the blocked node (node 0) answers: its
	// reason is recorded once it does (a late answer).
	waitAnswered(t, l, 0)
	r := l.Report()
	var vote *observe.Vote
	for i := range r.Votes {
		if r.Votes[i].Node == blocked {
			vote = &r.Votes[i]
		}
	}
	t.Logf("report with one replica blocked:\n%s", r)
	if vote == nil || vote.Granted || !errors.Is(vote.Err, ErrNotReplicated) || !strings.Contains(vote.Reason, "WAIT: 0 of 1") {
		t.Fatalf("the blocked node's vote: %+v", vote)
	}
	var we *waitError
	if !errors.As(vote.Err, &we) || we.Acked != 0 || we.Want != 1 {
		t.Fatalf("vote error %v, want a *waitError 0 of 1", vote.Err)
	}
	// Its share was given back: the node does not hold the lock.
	if st, err := c.nodes[0].Inspect(ctx, "one-blocked"); err != nil || st.Present {
		t.Fatalf("the node whose vote was withheld holds the lock: %+v %v", st, err)
	}
	_ = l.Unlock(ctx)

	if err := replicas[1].Pause(); err != nil {
		t.Fatal(err)
	}
	_, err = mustMutex(t, c, "two-blocked").TryLock(ctx)
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("TryLock with two of three replicas blocked: %v, want ErrNotObtained with ErrNotReplicated", err)
	}
}

func TestWaitOptionValidation(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	cases := []struct {
		name string
		opts []Option
	}{
		{"no replicas", []Option{WithReplicaAck(0, 10*time.Millisecond)}},
		{"no timeout", []Option{WithReplicaAck(1, 0)}},
		{"timeout above the per-node budget", []Option{WithReplicaAck(1, 300*time.Millisecond)}},
		{"negative restart delay", []Option{WithRestartDelay(-time.Second)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New([]redis.UniversalClient{c}, tc.opts...); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
}
