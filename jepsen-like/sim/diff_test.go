package sim

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/localredis"
)

// transcript runs the node package's operations on n and writes down what
// each returned, in a form that does not depend on timing (remaining TTLs
// are reported as bounds, not values). sleep waits (real or virtual).
func transcript(ctx context.Context, n *node.Node) []string {
	var out []string
	say := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	ttlWord := func(d, ttl time.Duration) string {
		switch {
		case d <= 0:
			return "none"
		case d <= ttl:
			return "in (0,ttl]"
		}
		return fmt.Sprintf("above ttl (%v)", d)
	}
	acq := func(l interface {
		Acquire(context.Context, time.Duration) (bool, time.Duration, int64, error)
	}, what string, ttl time.Duration) {
		ok, rem, fence, err := l.Acquire(ctx, ttl)
		say("%s: granted=%v remaining=%s fence=%d err=%v", what, ok, ttlWord(rem, ttl), fence, err)
	}
	state := func(name string) {
		st, err := n.Inspect(ctx, name)
		hs := []string{}
		for o, c := range st.Holders {
			hs = append(hs, fmt.Sprintf("%s=%d", o, c))
		}
		slices.Sort(hs)
		say("inspect %s: present=%v holders=%v attempts=%d ttl=%s fence=%d mode=%q err=%v",
			name, st.Present, hs, st.Attempts, ttlWord(st.TTL, 2*time.Second), st.Fence, st.Mode, err)
	}

	// A new fencing counter starts from the node's clock (TIME): the real
	// and the simulated clocks differ, so both count from a counter set here
	// (at 2^32: a counter below it counts as not made from the clock and is
	// seeded again, acquire_lib.lua).
	for _, name := range []string{"l", "e", "rw"} {
		if err := n.Client().Set(ctx, n.Keys(name).Fence, int64(1)<<32, 0).Err(); err != nil {
			say("preset fence %s: %v", name, err)
		}
	}

	// Plain lock: grant, idempotent retry, reentrancy, refusal, owner-checked
	// release, extend, fencing counter.
	a1 := n.Lock("l", "alice", "att-1", true)
	acq(a1, "alice#1 acquire", time.Second)
	acq(a1, "alice#1 retried", time.Second)
	a2 := n.Lock("l", "alice", "att-2", true)
	acq(a2, "alice#2 reentrant", time.Second)
	state("l")
	b1 := n.Lock("l", "bob", "att-3", true)
	acq(b1, "bob acquire while alice holds", time.Second)
	ok, err := b1.Release(ctx)
	say("bob release of alice's lock: %v %v", ok, err)
	ok, err = b1.Extend(ctx, 2*time.Second)
	say("bob extend of alice's lock: %v %v", ok, err)
	ok, err = a1.Extend(ctx, 2*time.Second)
	say("alice extend: %v %v", ok, err)
	ok, err = a1.Fence(ctx, 7)
	say("alice fence 7: %v %v", ok, err)
	ok, err = a1.Fence(ctx, 3)
	say("alice fence 3 (lower): %v %v", ok, err)
	state("l")
	ok, err = a2.Release(ctx)
	say("alice#2 release: %v %v", ok, err)
	ok, err = a1.Release(ctx)
	say("alice#1 release: %v %v", ok, err)
	state("l")
	acq(b1, "bob acquire after release", time.Second)
	ok, err = b1.Rollback(ctx)
	say("bob rollback: %v %v", ok, err)

	// Expiry: a lock taken for 50 ms is free 100 ms later.
	c1 := n.Lock("e", "carol", "att-4", false)
	acq(c1, "carol acquire 50ms", 50*time.Millisecond)
	d1 := n.Lock("e", "dave", "att-5", false)
	acq(d1, "dave acquire at once", time.Second)
	time.Sleep(100 * time.Millisecond)
	acq(d1, "dave acquire after expiry", time.Second)
	ok, err = c1.Release(ctx)
	say("carol release after expiry: %v %v", ok, err)

	// Read-write lock: readers share, a writer waits for them.
	r1 := n.RWLock("rw", "r1", "att-6", false, false)
	r2 := n.RWLock("rw", "r2", "att-7", false, false)
	w1 := n.RWLock("rw", "w1", "att-8", true, true)
	acq(r1, "reader 1", time.Second)
	acq(r2, "reader 2", time.Second)
	acq(w1, "writer while read", time.Second)
	state("rw")
	ok, err = r1.Release(ctx)
	say("reader 1 release: %v %v", ok, err)
	ok, err = r2.Release(ctx)
	say("reader 2 release: %v %v", ok, err)
	acq(w1, "writer after readers", time.Second)
	acq(r1, "reader while written", time.Second)
	ok, err = w1.Extend(ctx, time.Second)
	say("writer extend: %v %v", ok, err)
	ok, err = w1.Release(ctx)
	say("writer release: %v %v", ok, err)

	// Fair queue: tickets count up; only the first in line is granted.
	t1, err := n.TakeTicket(ctx, "f", "w-1", time.Second)
	say("ticket w-1: %d %v", t1, err)
	t2, err := n.TakeTicket(ctx, "f", "w-2", time.Second)
	say("ticket w-2: %d %v", t2, err)
	f2 := n.FairLock("f", "o2", "att-9", node.Waiter{ID: "w-2", Ticket: t2, Timeout: time.Second}, node.Enqueue, false)
	acq(f2, "fair w-2 (second in line)", time.Second)
	f1 := n.FairLock("f", "o1", "att-10", node.Waiter{ID: "w-1", Ticket: t1, Timeout: time.Second}, node.Enqueue, false)
	acq(f1, "fair w-1 (first in line)", time.Second)
	q, err := n.Queue(ctx, "f")
	ws := []string{}
	for _, e := range q {
		ws = append(ws, fmt.Sprintf("%s:%d", e.Waiter, e.Ticket))
	}
	say("queue: %v %v", ws, err)
	ok, err = f1.Release(ctx)
	say("fair w-1 release: %v %v", ok, err)
	acq(f2, "fair w-2 after w-1", time.Second)
	say("leave w-2: %v", n.Leave(ctx, "f", "w-2", time.Second))
	return out
}

func newNode(t *testing.T, c *redis.Client, opts ...node.Option) *node.Node {
	t.Helper()
	n, err := node.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(); _ = c.Close() })
	return n
}

// TestDifferential runs the same operations through package node against a
// real redis-server and a simulated node and wants the same transcript:
// with the scripts called by EVALSHA, and as Redis Functions (FCALL, the
// library loaded on first use).
func TestDifferential(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	for _, v := range []struct {
		name string
		opts []node.Option
	}{
		{"evalsha", nil},
		{"functions", []node.Option{node.WithFunctions(true)}},
	} {
		t.Run(v.name, func(t *testing.T) {
			s := localredis.StartT(t, localredis.Config{})
			real := transcript(t.Context(), newNode(t, s.Client(), v.opts...))

			var simulated []string
			synctest.Test(t, func(t *testing.T) {
				nw := NewNet(1)
				nd := NewNode(nw, "n0")
				t.Cleanup(nd.Close)
				if nd.lua == nil && len(v.opts) > 0 {
					t.Skip("SIM_LUA=miniredis: miniredis has no FUNCTION or FCALL")
				}
				simulated = transcript(t.Context(), newNode(t, redis.NewClient(ClientOptions(nw, "test", "n0")), v.opts...))
			})
			if len(real) != len(simulated) {
				t.Fatalf("transcripts differ in length: real %d, sim %d", len(real), len(simulated))
			}
			differ := 0
			for i := range real {
				if real[i] != simulated[i] {
					differ++
					t.Errorf("step %d:\n real: %s\n  sim: %s", i, real[i], simulated[i])
				}
			}
			if differ == 0 {
				t.Logf("%d steps agree", len(real))
				for _, s := range real {
					t.Log(s)
				}
			}
		})
	}
}
