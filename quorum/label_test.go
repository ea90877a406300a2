package quorum_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

func TestHolderLabel(t *testing.T) {
	servers := localredis.StartNT(t, 3, localredis.Config{})
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr())
	}
	host, _ := os.Hostname()
	for _, tc := range []struct {
		opts []quorum.Option
		want string
	}{
		{nil, host + ":" + strconv.Itoa(os.Getpid())},
		{[]quorum.Option{quorum.WithLabel("billing-worker-3")}, "billing-worker-3"},
	} {
		c, err := quorum.Dial(strings.Join(addrs, ","), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := c.Mutex("labelled")
		l, err := m.TryLock(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		// The client records its label in the background after its first
		// lease: look until it is there.
		var in admin.Inspection
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) { // poll: nothing says the label is written
			in, _ = c.Admin().Inspect(t.Context(), "labelled")
			if len(in.Holders) == 1 && in.Label(in.Holders[0]) == tc.want || time.Now().After(deadline) {
				break
			}
		}
		if len(in.Holders) != 1 || in.Label(in.Holders[0]) != tc.want || in.Holders[0] == tc.want {
			t.Errorf("holders %q, want the label %q and a unique id", in.Holders, tc.want)
		}
		// The label is recorded once per client, not in the lock: the
		// held lock's value is the attempt id alone and fits Redis's
		// embedded strings (node.FastValue).
		rc := servers[0].Client()
		v, err := rc.Get(t.Context(), "quorumlock:{labelled}").Result()
		rc.Close()
		if err != nil || len(v) > 28 || strings.Contains(v, tc.want) {
			t.Errorf("held value %q (%d bytes, %v): want the compact form, at most 28 bytes, no label", v, len(v), err)
		}
		l.Unlock(context.Background())
		c.Close()
	}
	if got := admin.OwnerLabel("billing-3#2f1c0b6e-3c59-4d2e-9f7e-1b2a3c4d5e6f:7"); got != "billing-3" {
		t.Errorf("an owner of an earlier version (label#uuid:seq) reads as %q, want its label", got)
	}
	if admin.OwnerLabel("worker-1") != "worker-1" {
		t.Error("an owner without a label is its own label")
	}
	// A client that only inspects records no label.
	c, err := quorum.Dial(strings.Join(addrs, ","))
	if err != nil {
		t.Fatal(err)
	}
	c.Admin().List(t.Context(), "*")
	c.Close()
	rc := servers[0].Client()
	defer rc.Close()
	// Closed clients removed their labels; the lock's fencing counter stays
	// (for its retention).
	if keys, err := rc.Keys(t.Context(), "*").Result(); err != nil || len(keys) != 1 || !strings.HasSuffix(keys[0], ":fence") {
		t.Errorf("keys after an inspecting client: %q %v, want only the lock's fencing counter", keys, err)
	}
	if _, err := quorum.Dial(addrs[0], quorum.WithLabel("a\x00b")); err == nil {
		t.Error("a label with NUL was accepted")
	}
}

// TestCloseLeavesNothing: after Close no key of the client stays on any
// node but the fencing counters, and those expire (the retention).
func TestCloseLeavesNothing(t *testing.T) {
	servers := localredis.StartNT(t, 3, localredis.Config{})
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr())
	}
	c, err := quorum.Dial(strings.Join(addrs, ","), quorum.WithLabel("leaves-nothing"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "orders/42"} {
		m, _ := c.Mutex(name)
		l, err := m.TryLock(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= 0 {
			t.Errorf("%s: token %d: fencing is on by default", name, l.Token())
		}
		if err := l.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(s *localredis.Server) map[string]time.Duration {
		rc := s.Client()
		defer rc.Close()
		keys := map[string]time.Duration{}
		iter := rc.Scan(t.Context(), 0, "*", 100).Iterator()
		for iter.Next(t.Context()) {
			keys[iter.Val()] = rc.PTTL(t.Context(), iter.Val()).Val()
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	// The label is recorded in the background after the first lease: wait
	// until every node has it, so Close has something to remove.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := 0
		for _, s := range servers {
			for k := range scan(s) {
				if strings.HasPrefix(k, "quorumlock:client:") {
					n++
				}
			}
		}
		if n == len(servers) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("labels on %d of %d nodes after 5s", n, len(servers))
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		fences := 0
		for k, ttl := range scan(s) {
			if !strings.HasSuffix(k, ":fence") {
				t.Errorf("%s: %s left behind after Close", s.Addr(), k)
				continue
			}
			fences++
			if ttl <= 0 || ttl > 7*24*time.Hour {
				t.Errorf("%s: fencing counter %s expires in %v; want the retention (7 days)", s.Addr(), k, ttl)
			}
		}
		if fences != 3 {
			t.Errorf("%s: %d fencing counters, want one per name (3)", s.Addr(), fences)
		}
	}
}
