package node

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A fast-path lock is a string with a PX expiry; every script that reads
// the lock as a hash first promotes it. A promotion in the key's last
// millisecond (PTTL answers 0 while the key still exists) must not leave a
// lock without expiry. Each kind of call that promotes another owner's
// string is fired as fast as it goes across the moment the string expires,
// round after round; afterwards the key must carry a TTL or be gone.
func TestPromoteInLastMillisecond(t *testing.T) {
	_, n := start(t)
	// Rounds go on until 40 of them hit the key's last millisecond (at
	// most 400 rounds): on a loaded machine most polls miss it (23 of 40
	// in three CI runs at once).
	const want, maxRounds = 40, 400
	kinds := []struct {
		name string
		try  func(ctx context.Context, name string, i int) error
	}{
		{"acquire", func(ctx context.Context, name string, i int) error {
			_, _, _, err := n.Lock(name, "bob", fmt.Sprint("b-", i), true).Acquire(ctx, time.Second)
			return err
		}},
		{"rw-acquire", func(ctx context.Context, name string, i int) error {
			_, _, _, err := n.RWLock(name, "bob", fmt.Sprint("b-", i), false, false).Acquire(ctx, time.Second)
			return err
		}},
		{"fair-try", func(ctx context.Context, name string, i int) error {
			_, _, _, err := n.FairLock(name, "bob", fmt.Sprint("b-", i), Waiter{}, NoQueue, false).Acquire(ctx, time.Second)
			return err
		}},
		{"rw-release", func(ctx context.Context, name string, i int) error {
			_, err := n.RWLock(name, "bob", fmt.Sprint("b-", i), false, false).Release(ctx)
			return err
		}},
		{"fence", func(ctx context.Context, name string, i int) error {
			_, err := n.Lock(name, "bob", fmt.Sprint("b-", i), true).Fence(ctx, 5)
			return err
		}},
		{"extend-other", func(ctx context.Context, name string, i int) error {
			_, err := n.Lock(name, "bob", fmt.Sprint("b-", i), false).Extend(ctx, time.Second)
			return err
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			ctx := t.Context()
			c := n.Client()
			stuck, missed, r := 0, 0, 0
			for ; r-missed < want && r < maxRounds; r++ {
				name := fmt.Sprintf("%s-%d", k.name, r)
				key := n.Keys(name).Lock
				if ok, _, _, err := n.Lock(name, "alice", "a", false).Acquire(ctx, 3*time.Millisecond); !ok || err != nil {
					t.Fatalf("fast-path acquire: %v %v", ok, err)
				}
				// Wait for the string's last millisecond (PTTL answers 0
				// while the key still exists), then fire once.
				for {
					pt, err := c.PTTL(ctx, key).Result()
					if err != nil {
						t.Fatal(err)
					}
					if pt == 0 {
						break
					}
					if pt < 0 {
						missed++ // expired between two polls: no promotion tried
						break
					}
				}
				if err := k.try(ctx, name, r); err != nil {
					t.Fatal(err)
				}
				if pt, err := c.PTTL(ctx, key).Result(); err != nil {
					t.Fatal(err)
				} else if pt == -1 {
					stuck++
					c.Del(ctx, key) // counted; leave nothing for the cleanup check
				}
			}
			t.Logf("%s: %d of %d rounds left the lock without expiry (%d rounds missed the last millisecond)", k.name, stuck, r, missed)
			if r-missed < want/2 {
				t.Errorf("%s: only %d of %d rounds hit the key's last millisecond: the test did not test", k.name, r-missed, r)
			}
			if stuck > 0 {
				t.Errorf("%s: %d of %d rounds left the lock with no expiry (held forever if its holder dies)", k.name, stuck, r)
			}
		})
	}
}

// Both queue keys of a fair lock expire, also when one of them was created
// after the other already had a TTL.
func TestFairQueueKeysBothExpire(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	name := "q"
	fk := n.FairKeys(name)
	c := n.Client()
	// The queue exists with a long TTL, the deadlines zset not at all (a
	// node that lost one of the two, or a queue left by an older version):
	// the next ZADD creates the deadlines with no TTL of its own.
	c.ZAdd(ctx, fk.Queue, redis.Z{Score: -1, Member: "old"})
	c.PExpire(ctx, fk.Queue, time.Minute)
	if _, err := n.TakeTicket(ctx, name, "w1", time.Second); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{fk.Queue, fk.Deadlines} {
		if pt, err := c.PTTL(ctx, key).Result(); err != nil || pt <= 0 {
			t.Errorf("%s: PTTL %v %v, want an expiry", key, pt, err)
		}
	}
	keys, err := n.keysWithoutExpiry(ctx)
	if err != nil || len(keys) != 0 {
		t.Errorf("keysWithoutExpiry = %q %v, want none", keys, err)
	}
}

// keysWithoutExpiry names lock keys without a TTL and leaves out the
// counters kept on purpose and keys of other prefixes.
func TestKeysWithoutExpiry(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	c := n.Client()
	k := n.Keys("x")
	c.Set(ctx, k.Fence, 3, 0)                      // fencing counter: allowed
	c.Set(ctx, n.FairKeys("x").Ticket, 9, 0)       // ticket counter: expires
	c.Set(ctx, "other:{x}", 1, 0)                  // not ours
	c.Set(ctx, n.Keys("y").Lock, "v", time.Minute) // has a TTL
	c.HSet(ctx, k.Lock, "alice", 1)                // a lock without expiry
	keys, err := n.keysWithoutExpiry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{k.Lock, n.FairKeys("x").Ticket}; !slices.Equal(keys, want) {
		t.Fatalf("keysWithoutExpiry = %q, want %q", keys, want)
	}
	if !persistentKey(k.Fence) || persistentKey(n.FairKeys("x").Ticket) || persistentKey(k.Lock) {
		t.Error("persistentKey disagrees with the allow-list")
	}
	c.Del(ctx, k.Lock, n.FairKeys("x").Ticket) // leave nothing for the cleanup check
}
