package localredis

import (
	"context"
	"testing"
	"time"
)

func TestSentinelFailover(t *testing.T) {
	start := time.Now()
	d := StartSentinelT(t, SentinelConfig{})
	t.Logf("1 group + 3 sentinels ready in %v", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rc := d.Client(0)
	defer rc.Close()
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old, err := d.Master(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if old != d.Groups[0].Servers[0] {
		t.Fatalf("master is %s, want the first server", old.Addr())
	}
	// Wait until the write is on the replica, then crash the master.
	rep := d.Groups[0].Servers[1]
	rrc := rep.Client()
	defer rrc.Close()
	for rrc.Get(ctx, "k").Val() != "v" {
		time.Sleep(5 * time.Millisecond) // poll: replication is asynchronous
	}
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	nm, err := d.WaitFailover(ctx, 0, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover to %s took %v", nm.Addr(), time.Since(killed).Round(time.Millisecond))
	if nm != rep {
		t.Fatalf("new master %s is not the replica %s", nm.Addr(), rep.Addr())
	}
	// The sentinel-aware client follows the failover.
	var v string
	for {
		v, err = rc.Get(ctx, "k").Result()
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond) // poll: the client finds the new master once the sentinels name it
	}
	if v != "v" {
		t.Fatalf("after failover GET = %q, %v", v, err)
	}
}

func TestStartSentinelValidates(t *testing.T) {
	if _, err := StartSentinel(t.Context(), SentinelConfig{Server: Config{Port: 1}}); err == nil {
		t.Fatal("accepted a fixed port")
	}
	if _, err := StartSentinel(t.Context(), SentinelConfig{Groups: -1}); err == nil {
		t.Fatal("accepted a negative count")
	}
}
