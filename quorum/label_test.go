package quorum_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

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
		in, _ := c.Admin().Inspect(t.Context(), "labelled")
		if len(in.Holders) != 1 || admin.OwnerLabel(in.Holders[0]) != tc.want || in.Holders[0] == tc.want {
			t.Errorf("holders %q, want the label %q and a unique id", in.Holders, tc.want)
		}
		l.Unlock(context.Background())
		c.Close()
	}
	if admin.OwnerLabel("worker-1") != "worker-1" {
		t.Error("an owner without a label is its own label")
	}
	if _, err := quorum.Dial(addrs[0], quorum.WithLabel("a\x00b")); err == nil {
		t.Error("a label with NUL was accepted")
	}
}
