package quorum

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
)

// Names and TTLs a lock cannot live with are refused, naming the limit or
// the option; an election's lock name is the election's alone.
func TestNameAndTTLLimits(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	rc := s.Client()
	t.Cleanup(func() { _ = rc.Close() })
	c := newClient(t, []redis.UniversalClient{rc})

	for _, tc := range []struct {
		name, want string
		is         error
	}{
		{ElectionPrefix + "e2", "Client.Election(\"e2\")", ErrReservedName},
		{strings.Repeat("n", MaxNameLen+1), "MaxNameLen", nil},
		{"a\x00b", "NUL", nil},
		{"", "empty", nil},
	} {
		_, err := c.Mutex(tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("Mutex(%.30q): %v, want an error naming %s", tc.name, err, tc.want)
		}
		if _, err := c.FairMutex(tc.name); err == nil {
			t.Errorf("FairMutex(%.30q) accepted", tc.name)
		}
		if _, err := c.MutexAll([]string{"ok", tc.name}); err == nil {
			t.Errorf("MutexAll with %.30q accepted", tc.name)
		}
	}
	if _, err := c.Mutex(strings.Repeat("n", MaxNameLen)); err != nil {
		t.Errorf("a name of MaxNameLen bytes: %v", err)
	}
	// The election itself takes its lock name.
	e, err := c.Election("e2")
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(t.Context(), "v")
	if err != nil {
		t.Fatal(err)
	}
	defer term.Unlock(t.Context())

	long := MaxTTL + time.Hour
	if _, err := New([]redis.UniversalClient{rc}, WithTTL(long)); err == nil || !strings.Contains(err.Error(), "WithTTL") || !strings.Contains(err.Error(), "MaxTTL") {
		t.Errorf("WithTTL(%v): %v", long, err)
	}
	if _, err := c.Mutex("x", WithTTL(long)); err == nil || !strings.Contains(err.Error(), "WithTTL") {
		t.Errorf("WithTTL(%v): %v", long, err)
	}
	if _, err := c.Mutex("x", WithLeaseTime(long)); err == nil || !strings.Contains(err.Error(), "WithLeaseTime") {
		t.Errorf("WithLeaseTime(%v): %v", long, err)
	}
	if _, err := c.Election("x", WithTTL(long)); err == nil || !strings.Contains(err.Error(), "WithTTL") {
		t.Errorf("WithTTL(%v): %v", long, err)
	}
}

// On a Redis Cluster every key of a lock shares one slot whatever its name:
// a name starting with '}' (an empty hash tag as it stands) included. The
// lock kinds whose scripts touch several keys work on such names, and the
// operator's list shows the name as it was given.
func TestBraceNamesOnCluster(t *testing.T) {
	cl := localredis.StartClusterT(t, 3, localredis.Config{})
	rc := cl.Client()
	t.Cleanup(func() { _ = rc.Close() })
	c := newClient(t, []redis.UniversalClient{rc}, WithTTL(5*time.Second), WithFencing(true))
	// Bounded: a lock whose keys split would not be obtained.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, name := range []string{"}x", "}", "a}b", "{y}", "{", "plain/1"} {
		k, f := c.nodes[0].Keys(name), c.nodes[0].FairKeys(name)
		slot, err := cl.Slot(ctx, k.Lock)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{k.Fence, k.Forced, f.Queue, f.Deadlines, f.Ticket} {
			if s, err := cl.Slot(ctx, key); err != nil || s != slot {
				t.Errorf("name %q: key %q in slot %d, the lock key %q in %d", name, key, s, k.Lock, slot)
			}
		}
		lease, err := mustMutex(t, c, name).Lock(ctx)
		if err != nil {
			t.Fatalf("Lock(%q) with fencing: %v", name, err)
		}
		list, err := c.Admin().List(ctx, "*")
		found := false
		for _, in := range list {
			found = found || in.Name == name
		}
		if err != nil || !found {
			t.Errorf("List does not show %q: %v", name, err)
		}
		if err := lease.Unlock(ctx); err != nil {
			t.Errorf("Unlock(%q): %v", name, err)
		}
		fm, err := c.FairMutex(name)
		if err != nil {
			t.Fatal(err)
		}
		fl, err := fm.Lock(ctx)
		if err != nil {
			t.Fatalf("fair Lock(%q): %v", name, err)
		}
		if err := fl.Unlock(ctx); err != nil {
			t.Errorf("fair Unlock(%q): %v", name, err)
		}
	}
	// Ordinary names keep their keys: deployments in use interoperate.
	if got := c.nodes[0].Keys("orders/1").Lock; got != "quorumlock:{orders/1}" {
		t.Errorf("the key of orders/1 is %q", got)
	}
}
