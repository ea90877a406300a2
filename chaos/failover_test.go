package chaos

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestCutLinkStopsReplication(t *testing.T) {
	c := StartT(t, Topology{Groups: 1})
	ctx := bounded(t, 30*time.Second)
	g := c.Groups[0]
	m, r := g.Master(), g.Replicas()[0]
	cl := client(t, m.Options())
	f := &CutLink{Group: g}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Set(ctx, "during", "1", 0).Err(); err != nil {
		t.Fatalf("clients still reach the master: %v", err)
	}
	// The write cannot reach the replica (give it ample time to try).
	time.Sleep(500 * time.Millisecond)
	if n, err := r.Admin().Exists(ctx, "during").Result(); err != nil || n != 0 {
		t.Fatalf("replica got a write across a cut link: exists=%d, %v", n, err)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "replica catches up after heal", func() bool {
		v, _ := r.Admin().Get(ctx, "during").Result()
		return v == "1"
	})
}

// Manual failover: the promoted replica is master and lacks what the old
// master accepted after the cut; after heal the old master follows the new
// one and loses those writes.
func TestPromoteSplitBrain(t *testing.T) {
	c := StartT(t, Topology{Groups: 1})
	ctx := bounded(t, 30*time.Second)
	g := c.Groups[0]
	old, rep := g.Master(), g.Replicas()[0]
	oldc := client(t, old.Options())
	if err := oldc.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitReplicated(ctx); err != nil {
		t.Fatal(err)
	}
	f := &Promote{Group: g}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if g.Master() != rep {
		t.Fatalf("group master is %s, want the promoted %s", g.Master().Name(), rep.Name())
	}
	// Split brain: the old master still takes writes from its clients.
	if err := oldc.Set(ctx, "during", "1", 0).Err(); err != nil {
		t.Fatalf("old master refused a write: %v", err)
	}
	newc := client(t, rep.Options())
	role, err := newc.Do(ctx, "ROLE").Slice()
	if err != nil || role[0] != "master" {
		t.Fatalf("promoted replica ROLE = %v, %v", role, err)
	}
	if v, _ := newc.Get(ctx, "before").Result(); v != "1" {
		t.Fatalf("promoted replica lost a replicated key: %q", v)
	}
	if _, err := newc.Get(ctx, "during").Result(); err != redis.Nil {
		t.Fatalf("promoted replica has the write made during the cut: %v", err)
	}
	// A client following the group's master now writes to the new master.
	gc := client(t, g.Options())
	if err := gc.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if role, _ := old.Role(ctx); role != "slave" {
		t.Fatalf("old master ROLE %q after heal, want slave", role)
	}
	if _, err := old.Admin().Get(ctx, "during").Result(); err != redis.Nil {
		t.Fatalf("old master kept its split-brain write after resync: %v", err)
	}
	if v, _ := old.Admin().Get(ctx, "after").Result(); v != "1" {
		t.Fatalf("old master did not get the new master's write: %q", v)
	}
}

// Real automatic failover: sentinels see the master vanish and promote the
// replica; a sentinel-aware client (through the proxies) follows.
func TestSentinelFailover(t *testing.T) {
	c := StartT(t, Topology{Groups: 1, Sentinels: 3})
	ctx := bounded(t, 60*time.Second)
	g := c.Groups[0]
	old, rep := g.Master(), g.Replicas()[0]
	oldc := client(t, old.Options())
	fc := redis.NewFailoverClient(g.FailoverOptions())
	t.Cleanup(func() { _ = fc.Close() })
	if err := fc.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, _ := old.Admin().Get(ctx, "before").Result(); v != "1" {
		t.Fatal("the failover client did not write to the master")
	}
	if err := g.WaitReplicated(ctx); err != nil {
		t.Fatal(err)
	}
	f := &SentinelFailover{Group: g}
	start := time.Now()
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("sentinels failed over in %v", time.Since(start).Round(time.Millisecond))
	if g.Master() != rep {
		t.Fatalf("new master %s, want %s", g.Master().Name(), rep.Name())
	}
	if role, err := rep.Role(ctx); err != nil || role != "master" {
		t.Fatalf("replica ROLE %q, %v after sentinel failover", role, err)
	}
	if err := oldc.Set(ctx, "during", "1", 0).Err(); err != nil {
		t.Fatalf("old master refused a write while isolated: %v", err)
	}
	// The failover client finds the new master through the sentinels.
	eventually(t, 10*time.Second, "failover client writes to the new master", func() bool {
		return fc.Set(ctx, "after", "1", 0).Err() == nil && rep.Admin().Get(ctx, "after").Val() == "1"
	})
	if n, _ := rep.Admin().Exists(ctx, "during").Result(); n != 0 {
		t.Fatal("new master has the old master's split-brain write")
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if role, _ := old.Role(ctx); role != "slave" {
		t.Fatalf("old master ROLE %q after heal", role)
	}
	// The sentinels agree on the new master after the heal, too.
	eventually(t, 10*time.Second, "sentinels agree on the new master", func() bool {
		n, ok := g.sentinelsAgree(ctx)
		return ok && n == rep
	})
}
