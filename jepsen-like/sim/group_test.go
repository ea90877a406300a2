package sim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// A group's replica gets what the master's scripts wrote, not the scripts:
// a script the master refused (the key held) writes nothing there, even
// when the replica applies it after the key expired (a backlog after a cut
// link), and a grant WAIT acknowledged is on the replica with the master's
// expiry. Replaying the scripts on the replica left it holding a refused
// caller's key and not the granted one's: a failover then lost a grant
// WAIT had counted (single+wait × random, "valid lease held on 0 of 1
// nodes").
func TestGroupReplicatesEffects(t *testing.T) {
	const take = `if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
  return 1
end
return 0`
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		g, cl, done := newTestGroup()
		defer done()
		tryTake := func(owner string, ms int) int64 {
			t.Helper()
			v, err := cl.Eval(ctx, take, []string{"k"}, owner, ms).Int64()
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if tryTake("a", 200) != 1 {
			t.Fatal("a: not granted on an empty master")
		}
		g.Cut()
		if tryTake("b", 1000) != 0 {
			t.Fatal("b: granted while a holds k")
		}
		time.Sleep(300 * time.Millisecond) // a's key expires on both nodes
		if tryTake("c", 1000) != 1 {
			t.Fatal("c: not granted after a's key expired")
		}
		time.Sleep(400 * time.Millisecond) // the backlog waits
		g.Heal()
		pipe := cl.Pipeline()
		pipe.Do(ctx, "wait", 1, 500)
		cmds, err := pipe.Exec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := cmds[0].(*redis.Cmd).Int64(); n != 1 {
			t.Fatalf("WAIT 1 after Heal: %d replicas", n)
		}
		master, replica := g.Master().Miniredis(), g.Replica().Miniredis()
		mv, _ := master.Get("k")
		rv, _ := replica.Get("k")
		if mv != "c" || rv != mv {
			t.Fatalf("k: %q on the master, %q on the replica that acknowledged every write", mv, rv)
		}
		// The replica's key expires when the master's does (PXAT), not
		// the 400 ms of backlog later.
		if mt, rt := master.TTL("k"), replica.TTL("k"); rt > mt+5*time.Millisecond {
			t.Errorf("k's TTL: %v on the master, %v on the replica", mt, rt)
		}
	})
}

// A plain SET NX the master grants after the last holder's key expired
// there reaches a replica that still has that key (its clock runs slower)
// as a DEL first, as a Redis master sends one when it finds a key
// expired: otherwise the SET fails on the replica, WAIT counts it, and a
// failover promotes the last holder's key instead of the new one.
func TestGroupReplicatesExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		g, cl, done := newTestGroup()
		defer done()
		wait := func() {
			t.Helper()
			if n, err := cl.Do(ctx, "wait", 1, 500).Int64(); err != nil || n != 1 {
				t.Fatalf("WAIT 1: %d, %v", n, err)
			}
		}
		if ok, err := cl.SetNX(ctx, "k", "a", 100*time.Millisecond).Result(); !ok || err != nil {
			t.Fatalf("a: %v %v", ok, err)
		}
		wait()
		g.Replica().SetRate(0.5)
		time.Sleep(150 * time.Millisecond) // gone on the master, not on the replica
		if !g.Replica().Miniredis().Exists("k") {
			t.Fatal("a's key already expired on the slower replica: the test shows nothing")
		}
		if ok, err := cl.SetNX(ctx, "k", "b", time.Second).Result(); !ok || err != nil {
			t.Fatalf("b: %v %v", ok, err)
		}
		wait()
		if rv, _ := g.Replica().Miniredis().Get("k"); rv != "b" {
			t.Fatalf("k on the replica that acknowledged the grant: %q, want b", rv)
		}
	})
}

// newTestGroup is a group g0 (2 ms replication lag) and a client of it,
// made inside the caller's synctest bubble; done closes both.
func newTestGroup() (*Group, *redis.Client, func()) {
	nw := NewNet(1)
	g := NewGroup(nw, "g0", 2*time.Millisecond)
	cl := redis.NewClient(ClientOptions(nw, "w0", "g0"))
	return g, cl, func() {
		_ = cl.Close()
		g.Close()
	}
}
