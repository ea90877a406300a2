package quorum

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/quorum/admin"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
)

// findingAbout returns the findings of severity sev that name addr and
// contain text.
func findingAbout(r *admin.Report, sev admin.Severity, addr, text string) []admin.Finding {
	var out []admin.Finding
	for _, f := range r.Findings {
		if f.Severity == sev && (addr == "" || slices.Contains(f.Nodes, addr)) && strings.Contains(f.Message, text) {
			out = append(out, f)
		}
	}
	return out
}

// The preflight check flags a server reached through two addresses, a
// replica given as a node, allkeys-lru with a memory limit, and persistence
// off; a clean setup has no warnings; WithPreflight makes New refuse.
func TestPreflight(t *testing.T) {
	good := localredis.StartNT(t, 3, localredis.Config{Persistence: localredis.AOFAlways, Extra: []string{"maxmemory-policy noeviction"}})
	plain := localredis.StartT(t, localredis.Config{Persistence: localredis.NoPersistence})
	lru := localredis.StartT(t, localredis.Config{Persistence: localredis.AOFAlways, Extra: []string{"maxmemory 100mb", "maxmemory-policy allkeys-lru"}})
	replica := localredis.StartT(t, localredis.Config{ReplicaOf: good[0].Addr()})
	client := func(addr string) redis.UniversalClient {
		c := redis.NewClient(localredis.ClientOptions(addr))
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx := t.Context()

	t.Run("clean", func(t *testing.T) {
		var cs []redis.UniversalClient
		for _, s := range good {
			cs = append(cs, client(s.Addr()))
		}
		// Servers just started are younger than a TTL: a notice only.
		c := newClient(t, cs, WithFencing(true), WithTTL(time.Second))
		r, err := c.Admin().Check(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("\n%s", r)
		if r.Worst() >= admin.Warning || len(r.Servers) != 3 {
			t.Fatalf("a clean setup has findings at warning or worse:\n%s", r)
		}
	})

	dup := "localhost:" + strconv.Itoa(plain.Port())
	bad := []redis.UniversalClient{client(plain.Addr()), client(dup), client(lru.Addr()), client(replica.Addr()), client(good[1].Addr())}
	t.Run("bad", func(t *testing.T) {
		c := newClient(t, bad)
		r, err := c.Admin().Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("\n%s", r)
		checks := []struct {
			sev        admin.Severity
			addr, text string
		}{
			{admin.Problem, dup, "the same server"},
			{admin.Problem, plain.Addr(), "the same server"},
			{admin.Problem, replica.Addr(), "is a replica"},
			{admin.Problem, lru.Addr(), "maxmemory-policy allkeys-lru"},
			{admin.Warning, plain.Addr(), "persistence off"},
			{admin.Notice, good[1].Addr(), "persistence"}, // appendfsync always: nothing
		}
		for _, ch := range checks {
			got := findingAbout(r, ch.sev, ch.addr, ch.text)
			want := ch.text != "persistence" || ch.sev != admin.Notice
			if (len(got) > 0) != want {
				t.Errorf("%s %q about %s: found %v, want %v", ch.sev, ch.text, ch.addr, got, want)
			}
		}
		if r.Findings[0].Severity != admin.Problem {
			t.Errorf("findings not worst first: %v", r.Findings[0])
		}
	})

	t.Run("New refuses", func(t *testing.T) {
		_, err := New(bad, WithPreflight(admin.Problem))
		var pe *admin.PreflightError
		if !errors.Is(err, admin.ErrPreflight) || !errors.As(err, &pe) || pe.Report.Count(admin.Problem) < 3 {
			t.Fatalf("New with WithPreflight(Problem) on a bad setup: %v", err)
		}
		t.Logf("%v", err)
		// Warning refuses a node without persistence too.
		_, err = New([]redis.UniversalClient{client(plain.Addr()), client(good[1].Addr()), client(good[2].Addr())}, WithPreflight(admin.Warning))
		if !errors.Is(err, admin.ErrPreflight) {
			t.Fatalf("WithPreflight(Warning) with persistence off on a node: %v", err)
		}
		c, err := New([]redis.UniversalClient{client(plain.Addr()), client(good[1].Addr()), client(good[2].Addr())}, WithPreflight(admin.Problem))
		if err != nil {
			t.Fatalf("WithPreflight(Problem) refused warnings only: %v", err)
		}
		_ = c.Close()
	})

	t.Run("WAIT replicas", func(t *testing.T) {
		c := newClient(t, []redis.UniversalClient{client(good[0].Addr()), client(good[1].Addr()), client(good[2].Addr())},
			WithReplicaAck(1, 10*time.Millisecond))
		r, err := c.Admin().Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// good[0] has the replica; the others have none and never vote.
		if len(findingAbout(r, admin.Problem, good[1].Addr(), "never votes")) != 1 || len(findingAbout(r, admin.Problem, good[0].Addr(), "never votes")) != 0 {
			t.Fatalf("WithReplicaAck(1) findings:\n%s", r)
		}
	})
}

// On a Cluster node the check reports every master and where a lock's keys
// live (one slot, thanks to the hash tag).
func TestPreflightCluster(t *testing.T) {
	cl := localredis.StartClusterT(t, localredis.MinClusterMasters, localredis.Config{})
	cc := cl.Client()
	t.Cleanup(func() { _ = cc.Close() })
	others := localredis.StartNT(t, 2, localredis.Config{})
	nodes := append([]redis.UniversalClient{cc}, testutil.Clients(t, others, nil)...)
	c := newClient(t, nodes)
	r, err := c.Admin().Check(t.Context(), "orders", "users/7")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", r)
	if len(r.Servers) != localredis.MinClusterMasters+2 {
		t.Fatalf("%d servers, want %d (every cluster master and the two standalones)", len(r.Servers), localredis.MinClusterMasters+2)
	}
	if len(r.Placements) != 2 {
		t.Fatalf("placements %+v, want one per name", r.Placements)
	}
	for _, p := range r.Placements {
		if p.Master == "" || slices.Min(p.Slots) != slices.Max(p.Slots) {
			t.Fatalf("placement %+v: want one slot and its master", p)
		}
		slot, err := cc.ClusterKeySlot(t.Context(), "{"+p.Name+"}").Result()
		if err != nil || slot != p.Slots[0] {
			t.Fatalf("placement %+v: slot of the hash tag is %d (%v)", p, slot, err)
		}
	}
	if len(findingAbout(r, admin.Problem, "", "")) != 0 {
		t.Fatalf("problems on a healthy cluster:\n%s", r)
	}

	// The safety gate on a Cluster node asks the master of the lock's slot
	// (INFO server in the same round trip): the lock is granted once the
	// servers have been up a TTL. Every node must grant (All): with a
	// majority the two standalones were once enough, on a loaded CI run,
	// before the Cluster node answered.
	g := newClient(t, nodes, WithPolicy(All), WithTTL(time.Second), WithRestartDetection(true), WithRetryInterval(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l, err := mustMutex(t, g, "orders").Lock(ctx)
	if err != nil {
		t.Fatalf("Lock with restart detection on a Cluster node: %v", err)
	}
	defer l.Unlock(ctx)
	if st, err := c.nodes[0].Inspect(ctx, "orders"); err != nil || !st.Present {
		t.Fatalf("the Cluster node does not hold the lock: %+v %v\n%s", st, err, l.Report())
	}
}
