package main

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// keysWithoutTTL lists every key on the nodes of spec that has no expiry
// (SCAN, whatever its prefix), as "addr/key".
func keysWithoutTTL(t *testing.T, spec string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, u := range strings.Split(spec, ",") {
		addr := strings.TrimPrefix(u, "redis://")
		c := redis.NewClient(&redis.Options{Addr: addr})
		iter := c.Scan(ctx, 0, "*", 1000).Iterator()
		for iter.Next(ctx) {
			pt, err := c.PTTL(ctx, iter.Val()).Result()
			if err != nil {
				t.Fatal(err)
			}
			// go-redis answers -1 (no expiry) as a Duration of -1 ns;
			// -2 (gone since the scan) as -2 ns.
			if pt == -1 {
				out = append(out, addr+"/"+iter.Val())
			}
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	}
	sort.Strings(out)
	return out
}

// Every CLI command that writes to the nodes leaves no key without a TTL
// on any of them, also when it fails (a force-unlock of a name nobody
// holds, a lock not obtained).
func TestCLICommandsLeaveNoKeyWithoutTTL(t *testing.T) {
	spec, c := opsNodes(t, 3)
	ctx := t.Context()
	held, err := c.Mutex("held")
	if err != nil {
		t.Fatal(err)
	}
	lease, err := held.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(context.Background())

	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"lock", "--fencing", "job", "--", "true"}, 0},
		{[]string{"lock", "job", "--", "true"}, 0},
		{[]string{"lock", "--try", "held", "--", "true"}, exitNotObtained},
		{[]string{"lock", "--wait", "300ms", "held", "--", "true"}, exitNotObtained},
		{[]string{"elect", "leader-job", "--", "true"}, 0},
		{[]string{"leader", "leader-job"}, -1},
		{[]string{"unlock", "--force", "--by", "ops", "nobody-holds-this"}, exitMissing},
		{[]string{"unlock", "--force", "--missing-ok", "nobody-holds-this"}, 0},
		{[]string{"unlock", "--force", "--by", "ops", "held"}, 0},
		{[]string{"functions", "load"}, 0},
		{[]string{"check"}, -1},
		{[]string{"locks"}, 0},
		{[]string{"inspect", "job"}, 0},
	} {
		args := append([]string{tc.args[0], "--nodes", spec}, tc.args[1:]...)
		code, out, stderr := cli(args...)
		if tc.code >= 0 && code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s%s", tc.args, code, tc.code, out, stderr)
		}
		if left := keysWithoutTTL(t, spec); len(left) > 0 {
			t.Fatalf("after %v: keys without a TTL: %q", tc.args, left)
		}
	}
	// A force-unlock that removed nothing left nothing, not even its record.
	for _, u := range strings.Split(spec, ",") {
		rc := redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(u, "redis://")})
		keys, err := rc.Keys(ctx, "*{nobody-holds-this}*").Result()
		_ = rc.Close()
		if err != nil || len(keys) > 0 {
			t.Errorf("%s after a force-unlock of a name nobody held: %q %v", u, keys, err)
		}
	}
	// A fair lock's ticket counter, made by the library, expires too.
	fm, err := c.FairMutex("fair")
	if err != nil {
		t.Fatal(err)
	}
	fl, err := fm.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		l, err := fm.Lock(ctx)
		if err == nil {
			err = l.Unlock(ctx)
		}
		waited <- err
	}()
	// Let the waiter queue, so that the hand-off is tested. Queued cannot
	// tell: it counts the holder's entry until the holder's leave lands on
	// each node. The check below holds either way.
	time.Sleep(100 * time.Millisecond)
	if err := fl.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if left := keysWithoutTTL(t, spec); len(left) > 0 {
		t.Fatalf("after a FairMutex hand-off: keys without a TTL: %q", left)
	}
}
