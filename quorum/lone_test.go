package quorum

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testmode"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// BenchmarkLoneCaller is Lock+Unlock at N=1 from one goroutine, the most
// common deployment (one process, one Redis, one lock at a time), with the
// default fencing and with fencing off. Run with -benchmem: allocations per
// Lock+Unlock are what TestLoneCallerAllocs pins.
func BenchmarkLoneCaller(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"fencing=default", nil}, {"fencing=off", []Option{WithFencing(false)}}} {
		b.Run(tc.name, func(b *testing.B) {
			_, clients := testutil.Servers(b, 1, localredis.Config{})
			c, err := New(clients, tc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			m, _ := c.Mutex("lone")
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				l, err := m.Lock(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLoneCallerAllocs pins the allocations of one Lock+Unlock at N=1 from
// one goroutine (BenchmarkLoneCaller), with the default fencing and without:
// the lone caller must not pay for the fan-out, batcher or timers it does
// not use. Allocations are deterministic, unlike timings; the bound leaves
// a margin of three for go-redis' own (a checkout from its pool, when the
// batcher's lane is not free, allocates). Measured: 16 with fencing, 11
// without (redislock: 30). Fencing's fast path (SET NX and INCR in one
// pipeline instead of a script: less server CPU; PEXPIRE only when due)
// reuses its boxed arguments and pays go-redis' pipeline on the client.
func TestLoneCallerAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a redis-server")
	}
	_, clients := testutil.Servers(t, 1, localredis.Config{})
	for _, tc := range []struct {
		name string
		opts []Option
		max  float64
	}{
		{"fencing=default", nil, 19},
		{"fencing=off", []Option{WithFencing(false)}, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, clients, tc.opts...)
			m := mustMutex(t, c, "lone-allocs-"+tc.name)
			ctx := context.Background()
			lockUnlock := func() {
				l, err := m.Lock(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			lockUnlock() // the first call learns the node's persistence and loads scripts
			bound := tc.max
			if testmode.Functions {
				// FCALL's release takes the general script path (its
				// arguments copied, a *redis.Cmd): 21 and 16 measured.
				bound += 5
			}
			check := func(when string) {
				got := testing.AllocsPerRun(200, lockUnlock)
				t.Logf("%s: %.1f allocations per Lock+Unlock", when, got)
				if got > bound {
					t.Errorf("%s: Lock+Unlock allocates %.1f times, want at most %.0f (run BenchmarkLoneCaller with -memprofile to see where)", when, got, bound)
				}
			}
			check("at first")
			if tc.opts == nil {
				// And after go-redis' 5 s without a put-back of the
				// connection (internal/node's laneHold): 26 before.
				for start := time.Now(); time.Since(start) < 5500*time.Millisecond; {
					lockUnlock()
				}
				check("after 5.5 s of Lock+Unlock")
			}
		})
	}
}
