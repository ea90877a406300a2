package quorum_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

func TestLockKeepsTheBestErrorPerNode(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	dead1, dead2 := testutil.RefusedAddr(t), testutil.RefusedAddr(t)
	c, err := quorum.Dial(strings.Join([]string{s.Addr(), dead1, dead2}, ","), quorum.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m, _ := c.Mutex("best-error")
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	_, err = m.Lock(ctx)
	if !errors.Is(err, quorum.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock: %v", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Lock's error lost \"connection refused\": %v", err)
	}
	var qe *quorum.Error
	if !errors.As(err, &qe) {
		t.Fatalf("Lock: no *quorum.Error in %v", err)
	}
	got := map[string]bool{}
	for _, ne := range qe.Nodes() {
		got[ne.Node] = errors.Is(ne, syscall.ECONNREFUSED)
	}
	for _, d := range []string{dead1, dead2} {
		if !got[d] {
			t.Errorf("no \"connection refused\" for %s: %+v", d, err)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("want one line: %q", err)
	}
}

// A node that had not answered when a quorum had already granted is
// reported as not needed, not as a fault.
func TestReportSaysNotNeeded(t *testing.T) {
	servers := localredis.StartNT(t, 3, localredis.Config{})
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr())
	}
	c, err := quorum.Dial(strings.Join(addrs, ","), quorum.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m, _ := c.Mutex("not-needed")
	if l, err := m.TryLock(t.Context()); err == nil { // warm the connections
		l.Unlock(t.Context())
	}
	if err := servers[2].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = servers[2].Resume() })
	l, err := m.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(context.Background())
	r := l.Report()
	v := r.Votes[2]
	if v.Answered || v.Reason != "not needed: a quorum granted before it answered" {
		t.Fatalf("the frozen node's vote: %+v\n%s", v, r)
	}
	if strings.Contains(r.String(), "no answer") {
		t.Fatalf("report calls it a fault:\n%s", r)
	}
}
