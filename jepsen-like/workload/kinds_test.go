package workload

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// Every workload runs against one real node without faults, records what
// its kind holds, and passes its checks.
func TestKindsOnRedis(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	for _, info := range Kinds {
		t.Run(string(info.Kind), func(t *testing.T) {
			k := info.Kind
			rec := history.NewRecorder(history.NewClock())
			res := resource.NewFenced(rec)
			var workers []Worker
			clients := 4
			if k == Batched {
				clients = 2
			}
			for w := range clients {
				rc := s.Client()
				t.Cleanup(func() { _ = rc.Close() })
				qc, err := quorum.New([]redis.UniversalClient{rc}, quorum.WithFencing(true), quorum.WithRetryInterval(50*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = qc.Close() })
				lease := time.Second
				if k.Watchdog() {
					lease = 0
				}
				l, err := QuorumKind(qc, k, "kinds-"+string(k), w, lease)
				if err != nil {
					t.Fatal(err)
				}
				workers = append(workers, Worker{ID: w, Locker: l})
			}
			ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
			defer cancel()
			cfg := Config{Seed: 1, CounterLock: k.CounterLock("kinds-" + string(k))}
			if k == Guarded {
				gc := s.Client()
				t.Cleanup(func() { _ = gc.Close() })
				cfg.Guard = RedisGuard(gc, "kinds-guard")
			}
			if err := Run(ctx, rec, res, workers, cfg); err != nil {
				t.Fatal(err)
			}
			h := rec.History()
			if k == Batched && len(h.Workers()) != 2*BatchCallers {
				t.Errorf("batched: %d workers, want %d", len(h.Workers()), 2*BatchCallers)
			}
			roles := map[string]int{}
			shared := 0
			for _, o := range h.Ops {
				if o.Kind == history.Acquire && o.Outcome == history.Ok {
					roles[o.Role]++
					if o.Shared {
						shared++
					}
				}
			}
			switch k {
			case RW:
				if roles[checker.RoleWriter] == 0 || shared == 0 {
					t.Errorf("rw: %d writer and %d reader acquisitions, want both", roles[checker.RoleWriter], shared)
				}
			case Fair:
				if roles[checker.RoleFair] == 0 {
					t.Errorf("fair: no fair acquisition recorded")
				}
			}
			opts := []checker.Option{checker.WithoutLinearizability(), checker.WithFairBound(2*time.Second + 500*time.Millisecond),
				checker.WithWakeupBound(checker.WakeupBound(50*time.Millisecond, 250*time.Millisecond))}
			if k == Election {
				if roles[checker.RoleLeader] == 0 || !slices.ContainsFunc(h.Ops, func(o history.Op) bool { return o.Kind == history.Observe && o.Token != 0 }) {
					t.Errorf("election: %d terms, and no follower was given one", roles[checker.RoleLeader])
				}
				// Leaders proclaim, followers read the values back.
				for _, kind := range []history.Kind{history.Proclaim, history.LeaderRead} {
					if !slices.ContainsFunc(h.Ops, func(o history.Op) bool { return o.Kind == kind && o.Outcome == history.Ok && o.Text != "" }) {
						t.Errorf("election: no Ok %s with a value", kind)
					}
				}
				opts = opts[1:] // the terms' values are a linearizability check
			}
			rep := checker.Check(h, opts...)
			if rep.Acquires.Ok == 0 {
				t.Fatalf("no acquisition: %+v", rep.Acquires)
			}
			for _, p := range []checker.Property{checker.MutualExclusion, checker.DataIntegrity, checker.Fencing} {
				if s := rep.Summarize(p); s.Verdict == checker.Violated {
					t.Errorf("%s: %s", p, s.Detail)
				}
			}
			if info.Property != "" {
				if s := rep.Summarize(info.Property); s.Verdict != checker.Ok {
					t.Errorf("%s: %v %s", info.Property, s.Verdict, s.Detail)
				}
			}
		})
	}
}

// A waiter that died in line holds the fair line back until its entry
// lapses; then the next waiter gets the lock.
func TestDyingWaiter(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	rc := s.Client()
	t.Cleanup(func() { _ = rc.Close() })
	const ttl = 300 * time.Millisecond
	qc, err := quorum.New([]redis.UniversalClient{rc}, quorum.WithTTL(ttl), quorum.WithRetryInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qc.Close() })
	n, err := node.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	die(t.Context(), []*node.Node{n}, "dying", "dead|1", ttl)
	q, err := n.Queue(t.Context(), "dying")
	if err != nil || len(q) != 1 || q[0].Waiter != "dead|1" {
		t.Fatalf("queue after die: %+v %v, want the dead waiter", q, err)
	}
	f, err := qc.FairMutex("dying", quorum.WithLeaseTime(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if l, err := f.TryLock(t.Context()); err == nil {
		_ = l.Unlock(t.Context())
		t.Fatal("TryLock was granted past a waiter in line")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l, err := f.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock behind a dead waiter: %v", err)
	}
	_ = l.Unlock(ctx)
}

func TestParseKinds(t *testing.T) {
	ks, err := ParseKinds("rw, fair")
	if err != nil || len(ks) != 2 || ks[0] != RW || ks[1] != Fair {
		t.Fatalf("ParseKinds = %v, %v", ks, err)
	}
	if _, err := ParseKinds("rw,nope"); err == nil {
		t.Fatal("ParseKinds accepted an unknown workload")
	}
	all, _ := ParseKinds("")
	if len(all) != len(Kinds) {
		t.Fatalf("ParseKinds(\"\") = %v", all)
	}
}
