package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fencing fast path sends the counter's PEXPIRE only when due
// (acquireFenced): the first time from a ReusedKeys, then once per
// retention/rearmFraction. A counter lost in between is made again from
// the clock, with the retention, by the seed. Tokens increase throughout,
// batched or not, and on a client that ignores deadlines (guarded).
func TestFencedRearm(t *testing.T) {
	for _, tc := range []struct {
		name              string
		batching, guarded bool
	}{{"batched", true, false}, {"unbatched", false, false}, {"guarded", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s, n0 := start(t)
			c := n0.Client()
			if tc.guarded {
				rc := redis.NewClient(&redis.Options{Addr: s.Addr()})
				t.Cleanup(func() { _ = rc.Close() })
				c = rc
			}
			n, err := New(c, WithBatching(tc.batching))
			if err != nil {
				t.Fatal(err)
			}
			if isGuarded(n) != tc.guarded {
				t.Fatalf("node guarded %v, want %v", isGuarded(n), tc.guarded)
			}
			t.Cleanup(func() { _ = n.Close() })
			ctx := t.Context()
			k := n.ReusedKeys("rearm")
			var last int64
			i := 0
			lockUnlock := func(what string) {
				t.Helper()
				i++
				l := n.LockKeys(k, "alice", fmt.Sprintf("alice.%d", i), true)
				ok, _, fence, err := l.Acquire(ctx, time.Second)
				if !ok || err != nil || fence <= last {
					t.Fatalf("%s: %v %d %v, want a grant with a token > %d", what, ok, fence, err, last)
				}
				last = fence
				if ok, err := l.Release(ctx); !ok || err != nil {
					t.Fatalf("%s: release %v %v", what, ok, err)
				}
			}
			pttl := func() time.Duration {
				t.Helper()
				d, err := n.Client().PTTL(ctx, k.Fence).Result()
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			retained := func(what string) {
				t.Helper()
				if d := pttl(); d <= DefaultFenceRetention-time.Minute || d > DefaultFenceRetention {
					t.Fatalf("%s: counter expires in %v, want the retention %v", what, d, DefaultFenceRetention)
				}
			}

			lockUnlock("first use")
			retained("first use")
			lockUnlock("second use") // seeded: the fast path alone
			// Not due: an expiry set meanwhile stays as it is.
			n.Client().PExpire(ctx, k.Fence, time.Hour)
			lockUnlock("not due")
			if d := pttl(); d <= 0 || d > time.Hour {
				t.Fatalf("not due: counter expires in %v, want the hour set before (no PEXPIRE sent)", d)
			}
			// Due once rearmEvery has passed since the last re-arm.
			k.fenced.rearmed.Add(-int64(n.rearmEvery))
			lockUnlock("due")
			retained("due")
			// Lost between re-arms (a restart without persistence): made
			// again from the clock, with the retention.
			n.Client().PExpire(ctx, k.Fence, time.Hour)
			n.Client().Del(ctx, k.Fence)
			before := time.Now().UnixMicro()
			lockUnlock("lost")
			if last < before {
				t.Fatalf("lost: token %d, want one from the clock ≥ %d", last, before)
			}
			retained("lost")
		})
	}
}
