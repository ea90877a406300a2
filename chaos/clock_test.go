package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
)

// needClock skips (or, in CI, fails) when libfaketime or gcc is missing.
func needClock(t *testing.T) {
	t.Helper()
	if err := ClockSupported(); err != nil {
		if localredis.Required() {
			t.Fatalf("%v", err)
		}
		t.Skipf("real clock faults unavailable here: %v", err)
	}
}

func TestFaketimeSpec(t *testing.T) {
	for _, tc := range []struct {
		off  time.Duration
		rate float64
		want string
	}{
		{0, 2, "+0 x2"},
		{time.Hour, 0, "+3600"},
		{1500 * time.Millisecond, 0.5, "+1.5 x0.5"},
		{-time.Minute, 1, "-60"},
	} {
		if got := FaketimeSpec(tc.off, tc.rate); got != tc.want {
			t.Errorf("FaketimeSpec(%v, %v) = %q, want %q", tc.off, tc.rate, got, tc.want)
		}
	}
}

// waitGone returns how long after start the key disappeared.
func waitGone(ctx context.Context, t *testing.T, c *redis.Client, key string, start time.Time, limit time.Duration) time.Duration {
	t.Helper()
	for {
		n, err := c.Exists(ctx, key).Result()
		if err == nil && n == 0 {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s still there after %v (err %v)", key, limit, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Under libfaketime at twice the speed, a 2 s PX key expires in about 1 s.
func TestClockSkewFastClockHalvesTTL(t *testing.T) {
	needClock(t)
	c := StartT(t, Topology{Masters: 1})
	ctx := bounded(t, 60*time.Second)
	n := c.Masters[0]
	if err := n.Admin().Set(ctx, "kept", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	f := &ClockSkew{Node: n, Rate: 2}
	if f.String() != "clock(m0,x2)" {
		t.Fatalf("String() = %q", f.String())
	}
	pid := n.Server().PID()
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Server().PID() == pid {
		t.Fatal("node not restarted under libfaketime")
	}
	if v, _ := n.Admin().Get(ctx, "kept").Result(); v != "v" {
		t.Fatal("data lost across the clock restart")
	}
	cl := client(t, n.Options())
	start := time.Now()
	if err := cl.Set(ctx, "lock", "me", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	gone := waitGone(ctx, t, cl, "lock", start, 5*time.Second)
	t.Logf("2 s PX key expired after %v of real time", gone.Round(time.Millisecond))
	if gone > 1700*time.Millisecond {
		t.Fatalf("2 s key lived %v on a x2 clock, want about 1 s", gone)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := cl.Set(ctx, "lock", "me", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if gone := waitGone(ctx, t, cl, "lock", start, 5*time.Second); gone < 800*time.Millisecond {
		t.Fatalf("after Recover a 1 s key expired after %v", gone)
	}
}

// A forward jump expires keys at once; keys written during it keep their
// far-future expiry after the clock is set back.
func TestClockSkewJump(t *testing.T) {
	needClock(t)
	c := StartT(t, Topology{Masters: 1})
	ctx := bounded(t, 60*time.Second)
	n := c.Masters[0]
	if err := n.Admin().Set(ctx, "lock", "me", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	f := &ClockSkew{Node: n, Offset: time.Hour}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := n.Admin().Exists(ctx, "lock").Result(); n != 0 {
		t.Fatal("a 1 min key survived a 1 h jump forward")
	}
	now, err := n.Admin().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if skew := time.Until(now); skew < 59*time.Minute || skew > 61*time.Minute {
		t.Fatalf("node TIME is %v ahead, want 1 h", skew)
	}
	if err := n.Admin().Set(ctx, "during", "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := n.Admin().PTTL(ctx, "during").Result(); ttl < 30*time.Minute {
		t.Fatalf("key written during the jump has PTTL %v after the clock went back, want ~1 h", ttl)
	}
}

func TestEmulatedClockSkew(t *testing.T) {
	c := StartT(t, Topology{Masters: 1})
	ctx := bounded(t, 30*time.Second)
	n := c.Masters[0]
	a := n.Admin()
	for _, kv := range []struct {
		k   string
		ttl time.Duration
	}{{"lock:a", 10 * time.Second}, {"lock:b", 500 * time.Millisecond}, {"other", 10 * time.Second}, {"lock:forever", 0}} {
		if err := a.Set(ctx, kv.k, "v", kv.ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	jump := &EmulatedClockSkew{Node: n, Match: "lock:*", Jump: time.Second}
	if got := jump.String(); got != "clock-emulated(m0,+1s)" {
		t.Fatalf("String() = %q", got)
	}
	before := time.Now()
	preA, preOther := a.PTTL(ctx, "lock:a").Val(), a.PTTL(ctx, "other").Val()
	if err := jump.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	postA, postOther := a.PTTL(ctx, "lock:a").Val(), a.PTTL(ctx, "other").Val()
	elapsed := time.Since(before)
	// Time only ever shortens a TTL, so the jump shows as at least 1 s less;
	// the other key lost no more than the real time that passed.
	if postA <= 0 || postA > preA-time.Second {
		t.Fatalf("lock:a PTTL %v → %v across a 1 s emulated jump", preA, postA)
	}
	if postOther < preOther-elapsed-5*time.Millisecond {
		t.Fatalf("a key outside the pattern was shortened: %v → %v in %v", preOther, postOther, elapsed)
	}
	if a.Exists(ctx, "lock:b").Val() != 0 {
		t.Fatal("lock:b (500 ms) survived a 1 s jump")
	}
	if a.TTL(ctx, "lock:forever").Val() != -1 {
		t.Fatal("a key without expiry got one")
	}
	if err := jump.Recover(ctx); err != nil {
		t.Fatal(err)
	}

	// Rate 3: a 3 s key lives about 1 s.
	fast := &EmulatedClockSkew{Node: n, Match: "lock:*", Rate: 3, Tick: 50 * time.Millisecond}
	if err := fast.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := a.Set(ctx, "lock:c", "v", 3*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	gone := waitGone(ctx, t, a, "lock:c", start, 5*time.Second)
	if err := fast.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if gone > 2*time.Second {
		t.Fatalf("3 s key lived %v under an emulated x3 clock", gone)
	}
	// Recover stops the drift: a key loses only real time.
	set := time.Now()
	if err := a.Set(ctx, "lock:d", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	ttl := a.PTTL(ctx, "lock:d").Val()
	if lost := 10*time.Second - ttl; lost > time.Since(set)+5*time.Millisecond {
		t.Fatalf("drift went on after Recover: lost %v in %v", lost, time.Since(set))
	}
}

// At half speed a 1 s key lives about 2 s.
func TestClockSkewSlowClock(t *testing.T) {
	needClock(t)
	c := StartT(t, Topology{Masters: 1})
	ctx := bounded(t, 60*time.Second)
	n := c.Masters[0]
	f := &ClockSkew{Node: n, Rate: 0.5}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := n.Admin().Set(ctx, "lock", "me", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	gone := waitGone(ctx, t, n.Admin(), "lock", start, 10*time.Second)
	t.Logf("1 s PX key expired after %v of real time", gone.Round(time.Millisecond))
	if gone < 1400*time.Millisecond {
		t.Fatalf("1 s key lived only %v on a x0.5 clock, want about 2 s", gone)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
}
