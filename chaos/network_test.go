package chaos

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The client deadline used against a faulty node; the bounds below are
// generous on purpose (shared, noisy machines): they only show the fault.
const deadline = 300 * time.Millisecond

func TestPartitionSilentTimesOut(t *testing.T) {
	c := StartT(t, Topology{Masters: 1})
	ctx := bounded(t, 20*time.Second)
	n := c.Masters[0]
	cl := client(t, n.Options())
	if err, _ := pingWithin(ctx, cl, time.Second); err != nil {
		t.Fatal(err)
	}
	f := &Partition{Proxy: n.Proxy()}
	if f.String() != "partition(m0)" {
		t.Fatalf("String() = %q", f.String())
	}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	// An open pooled connection and a fresh one both hang until the client's
	// own deadline: the proxy still accepts, nothing comes back.
	for i := 0; i < 2; i++ {
		err, took := pingWithin(ctx, cl, deadline)
		if !isTimeout(err) {
			t.Fatalf("PING %d through a silent partition: %v after %v, want a timeout", i, err, took)
		}
		if took < deadline/2 || took > 5*deadline {
			t.Fatalf("PING %d failed after %v, want about the %v deadline", i, took, deadline)
		}
	}
	// The server itself is fine (the harness bypasses the proxy).
	if err := n.Admin().Ping(ctx).Err(); err != nil {
		t.Fatalf("direct PING during the partition: %v", err)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if err, _ := pingWithin(ctx, cl, time.Second); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}
}

func TestPartitionLoudRefuses(t *testing.T) {
	c := StartT(t, Topology{Masters: 1})
	ctx := bounded(t, 20*time.Second)
	n := c.Masters[0]
	cl := client(t, n.Options())
	if err, _ := pingWithin(ctx, cl, time.Second); err != nil {
		t.Fatal(err)
	}
	f := &Partition{Proxy: n.Proxy(), Loud: true}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	// The pooled connection was closed by the proxy: the first PING fails
	// without waiting for the deadline; a fresh dial is refused.
	err, took := pingWithin(ctx, cl, 2*time.Second)
	if err == nil || isTimeout(err) || took > time.Second {
		t.Fatalf("first PING through a loud partition: %v after %v, want a quick failure", err, took)
	}
	err, took = pingWithin(ctx, cl, 2*time.Second)
	if !isRefused(err) || took > time.Second {
		t.Fatalf("PING through a loud partition: %v after %v, want connection refused at once", err, took)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if err, _ := pingWithin(ctx, cl, time.Second); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}
}

// Reply loss: the SET runs on the server, the client never hears back.
func TestReplyLossExecutesButNoReply(t *testing.T) {
	c := StartT(t, Topology{Masters: 1})
	ctx := bounded(t, 20*time.Second)
	n := c.Masters[0]
	cl := client(t, n.Options())
	// Open the connection first: on a new one go-redis sends HELLO and waits
	// for its reply, which the fault swallows too.
	if err, _ := pingWithin(ctx, cl, time.Second); err != nil {
		t.Fatal(err)
	}
	f := &ReplyLoss{Proxy: n.Proxy()}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, deadline)
	err := cl.SetNX(sctx, "lock", "me", 10*time.Second).Err()
	cancel()
	if !isTimeout(err) {
		t.Fatalf("SET NX with reply loss: %v, want a timeout", err)
	}
	eventually(t, 5*time.Second, "the SET reached the server", func() bool {
		v, _ := n.Admin().Get(ctx, "lock").Result()
		return v == "me"
	})
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := cl.SetNX(ctx, "lock", "me", 10*time.Second).Result(); err != nil || ok {
		t.Fatalf("after heal SET NX = %v, %v: want false (the lost-reply grant is there)", ok, err)
	}
}

func TestLatencyWithJitter(t *testing.T) {
	c := StartT(t, Topology{Masters: 1})
	ctx := bounded(t, 20*time.Second)
	n := c.Masters[0]
	cl := client(t, n.Options())
	if err, _ := pingWithin(ctx, cl, time.Second); err != nil {
		t.Fatal(err)
	}
	f := &Latency{Proxy: n.Proxy(), Latency: 150 * time.Millisecond, Jitter: 50 * time.Millisecond}
	if got := f.String(); got != "latency(m0,150ms±50ms)" {
		t.Fatalf("String() = %q", got)
	}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	// Two legs of 100–200 ms each: at least 200 ms per round trip.
	err, took := pingWithin(ctx, cl, 5*time.Second)
	if err != nil || took < 200*time.Millisecond {
		t.Fatalf("PING with latency: %v after %v, want ≥ 200ms", err, took)
	}
	// A deadline shorter than the delay fails.
	if err, _ := pingWithin(ctx, cl, 50*time.Millisecond); !isTimeout(err) {
		t.Fatalf("PING with a 50ms deadline under 150ms latency: %v", err)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	// go-redis dropped the timed-out connection; a fresh one is fast.
	err, took = pingWithin(ctx, cl, 5*time.Second)
	if err != nil || took > 190*time.Millisecond {
		t.Fatalf("PING after removing latency: %v after %v, want under the 200ms the latency cost", err, took)
	}
}

func TestBandwidthLimit(t *testing.T) {
	c := StartT(t, Topology{Masters: 1})
	ctx := bounded(t, 30*time.Second)
	n := c.Masters[0]
	big := strings.Repeat("x", 64<<10) // 64 KB
	if err := n.Admin().Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	cl := client(t, n.Options())
	f := &Bandwidth{Proxy: n.Proxy(), KBps: 64}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	// 64 KB at 64 KB/s takes about a second; unlimited loopback takes < 10 ms.
	start := time.Now()
	v, err := cl.Get(ctx, "big").Result()
	took := time.Since(start)
	if err != nil || len(v) != len(big) {
		t.Fatalf("GET big: %d bytes, %v", len(v), err)
	}
	if took < 500*time.Millisecond {
		t.Fatalf("64 KB through a 64 KB/s limit took %v, want ≥ 500ms", took)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := cl.Get(ctx, "big").Result(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 400*time.Millisecond {
		t.Fatalf("GET big after removing the limit took %v", took)
	}
}
