package chaos

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
)

func TestPauseResume(t *testing.T) {
	c := StartT(t, Topology{Masters: 1})
	ctx := bounded(t, 20*time.Second)
	n := c.Masters[0]
	cl := client(t, n.Options())
	f := &Pause{Node: n}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if !n.Server().Paused() {
		t.Fatal("server not paused")
	}
	// Through the proxy and directly: no answer within the deadline.
	if err, took := pingWithin(ctx, cl, deadline); !isTimeout(err) {
		t.Fatalf("PING to a paused node: %v after %v, want a timeout", err, took)
	}
	if err, took := pingWithin(ctx, n.Admin(), deadline); !isTimeout(err) {
		t.Fatalf("direct PING to a paused node: %v after %v, want a timeout", err, took)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if err, _ := pingWithin(ctx, cl, 2*time.Second); err != nil {
		t.Fatalf("PING after resume: %v", err)
	}
}

func TestCrashRestart(t *testing.T) {
	for _, tc := range []struct {
		name        string
		persistence localredis.Persistence
		fault       func(n *Node) *Crash
		survives    bool
	}{
		{"aof-always", localredis.AOFAlways, func(n *Node) *Crash { return &Crash{Node: n} }, true},
		{"no-persistence", localredis.NoPersistence, func(n *Node) *Crash { return &Crash{Node: n} }, false},
		{"power-loss-aof-always", localredis.AOFAlways, func(n *Node) *Crash { return &Crash{Node: n, PowerLoss: true} }, false},
		{"immediate-aof-always", localredis.AOFAlways, func(n *Node) *Crash { return &Crash{Node: n, Restart: true} }, true},
		{"immediate-no-persistence", localredis.NoPersistence, func(n *Node) *Crash { return &Crash{Node: n, Restart: true} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := StartT(t, Topology{Masters: 1, Persistence: tc.persistence})
			ctx := bounded(t, 30*time.Second)
			n := c.Masters[0]
			cl := client(t, n.Options())
			if err := cl.Set(ctx, "lock", "me", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			pid := n.Server().PID()
			f := tc.fault(n)
			if err := f.Inject(ctx); err != nil {
				t.Fatal(err)
			}
			if !f.Restart {
				// Down: the proxy accepts, cannot reach the node and hangs up.
				if n.Server().Running() {
					t.Fatal("server still running after the crash")
				}
				if err, took := pingWithin(ctx, cl, 2*time.Second); err == nil || took > time.Second {
					t.Fatalf("PING to a crashed node: %v after %v, want a quick failure", err, took)
				}
				if err := f.Recover(ctx); err != nil {
					t.Fatal(err)
				}
			} else if err := f.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			if p := n.Server().PID(); p == 0 || p == pid {
				t.Fatalf("pid %d after restart, was %d", p, pid)
			}
			v, err := cl.Get(ctx, "lock").Result()
			if tc.survives && v != "me" {
				t.Fatalf("key lost: %q, %v", v, err)
			}
			if !tc.survives && err != redis.Nil {
				t.Fatalf("key survived: %q, %v", v, err)
			}
		})
	}
}
