package localredis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartClusterServesAllSlots(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	c := StartClusterT(t, 3, Config{})
	t.Logf("3-master cluster ready in %v", time.Since(start).Round(time.Millisecond))
	rc := c.Client()
	defer rc.Close()
	// Keys with different hash tags land on different masters; the client
	// follows the slot map.
	owners := map[int]bool{}
	for _, k := range []string{"{a}", "{b}", "{c}", "{d}", "{e}", "{f}"} {
		if err := rc.Set(ctx, k, "v", time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		slot, err := c.Slot(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		o, err := c.SlotOwner(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		owners[o] = true
	}
	if len(owners) < 2 {
		t.Fatalf("six hash tags all on master %v: slots not spread", owners)
	}
	if _, err := StartCluster(ctx, 2, Config{}); err == nil {
		t.Fatal("StartCluster accepted 2 masters")
	}
}

func TestMoveSlotKeepsKeyAndTTL(t *testing.T) {
	ctx := t.Context()
	c := StartClusterT(t, 3, Config{})
	rc := c.Client()
	defer rc.Close()
	const key, other = "lock{x}", "fence{x}"
	if err := rc.Set(ctx, key, "held", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx, other, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	slot, _ := c.Slot(ctx, key)
	from, err := c.SlotOwner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	to := (from + 1) % 3
	var splitErr error
	err = c.MoveSlot(ctx, slot, to, func(moved int) {
		if moved == 1 {
			// One of the two keys is on each node: a multi-key command
			// cannot run until the move is done.
			splitErr = rc.MGet(ctx, key, other).Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if splitErr == nil || !isTryAgain(splitErr) {
		t.Errorf("multi-key read with the slot half-moved: %v, want TRYAGAIN", splitErr)
	}
	if o, _ := c.SlotOwner(ctx, slot); o != to {
		t.Fatalf("slot %d owned by %d after the move, want %d", slot, o, to)
	}
	if v, err := rc.Get(ctx, key).Result(); err != nil || v != "held" {
		t.Fatalf("after the move GET = %q, %v", v, err)
	}
	if ttl, err := rc.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > 30*time.Second {
		t.Fatalf("TTL after the move = %v, %v; want kept", ttl, err)
	}
}

func isTryAgain(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && len(re.Error()) >= 8 && re.Error()[:8] == "TRYAGAIN"
}

var _ = context.Background
