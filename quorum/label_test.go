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
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
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
	if n, err := rc.DBSize(t.Context()).Result(); err != nil || n != 2 { // the two lockers' labels
		t.Errorf("keys after an inspecting client: %d %v, want the 2 labels of the lockers", n, err)
	}
	if _, err := quorum.Dial(addrs[0], quorum.WithLabel("a\x00b")); err == nil {
		t.Error("a label with NUL was accepted")
	}
}
