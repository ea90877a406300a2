package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/leakcheck"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/quorum"
)

func dialAddrs(t *testing.T, addrs []string, opts ...quorum.Option) *quorum.Client {
	t.Helper()
	c, err := quorum.Dial(strings.Join(addrs, ","), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The errors a user meets on real nodes: each is one line, summary first,
// and the nodes' errors are behind it, the most telling first.
func TestErrorFormatsOnNodes(t *testing.T) {
	servers := localredis.StartNT(t, 3, localredis.Config{})
	live := []string{servers[0].Addr(), servers[1].Addr(), servers[2].Addr()}
	dead := []string{testutil.RefusedAddr(t), testutil.RefusedAddr(t), testutil.RefusedAddr(t)}
	mixed := []string{servers[0].Addr(), servers[1].Addr(), dead[0]}
	holder := dialAddrs(t, live, quorum.WithTTL(5*time.Second))
	// Holds on the first node only: an attempt on mixed is decided by the
	// dead node's answer, so its error is always seen.
	firstHolder := dialAddrs(t, live[:1], quorum.WithTTL(5*time.Second))
	hold := func(t *testing.T, c *quorum.Client, name string) {
		m, _ := c.Mutex(name)
		l, err := m.TryLock(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Unlock(context.Background()) })
	}
	for _, tc := range []struct {
		name     string
		op       func(t *testing.T) error
		is, isnt []error
		says     string
		first    error // the first *NodeError wraps it
	}{
		{
			name: "refused",
			op: func(t *testing.T) error {
				hold(t, holder, "orders/42")
				m, _ := dialAddrs(t, live).Mutex("orders/42")
				_, err := m.TryLock(t.Context())
				return err
			},
			is:    []error{quorum.ErrNotObtained, quorum.ErrTaken},
			says:  `quorumlock: lock "orders/42" not obtained: held by another owner on `,
			first: quorum.ErrTaken,
		},
		{
			name: "unreachable",
			op: func(t *testing.T) error {
				m, _ := dialAddrs(t, dead).Mutex("orders/43")
				_, err := m.TryLock(t.Context())
				return err
			},
			is:    []error{quorum.ErrNotObtained, syscall.ECONNREFUSED},
			isnt:  []error{quorum.ErrTaken},
			says:  `quorumlock: lock "orders/43" not obtained: `,
			first: syscall.ECONNREFUSED,
		},
		{
			// A refused connection tells more than "held by another
			// owner": errors.As finds it first.
			name: "mixed, cancelled",
			op: func(t *testing.T) error {
				hold(t, firstHolder, "orders/44")
				m, _ := dialAddrs(t, mixed).Mutex("orders/44")
				ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
				defer cancel()
				_, err := m.Lock(ctx)
				return err
			},
			is:    []error{quorum.ErrNotObtained, quorum.ErrTaken, syscall.ECONNREFUSED, context.DeadlineExceeded},
			says:  `quorumlock: lock "orders/44" not obtained: held by another owner on 1 of 3 nodes, 1 failed (` + dead[0] + ": dial tcp",
			first: syscall.ECONNREFUSED,
		},
		{
			name: "extend not held",
			op: func(t *testing.T) error {
				m, _ := dialAddrs(t, live).Mutex("orders/45", quorum.WithLeaseTime(10*time.Second))
				l, err := m.TryLock(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := holder.Admin().ForceUnlock(t.Context(), "orders/45", "test"); err != nil {
					t.Fatal(err)
				}
				err = l.Extend(t.Context())
				l.Unlock(t.Context())
				return err
			},
			is:    []error{quorum.ErrNotHeld, multilock.ErrLost},
			says:  `quorumlock: lock "orders/45" not extended: no longer held on `,
			first: quorum.ErrNotHeld,
		},
		{
			name: "unlock not held",
			op: func(t *testing.T) error {
				m, _ := dialAddrs(t, live).Mutex("orders/46", quorum.WithLeaseTime(10*time.Second))
				l, err := m.TryLock(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := holder.Admin().ForceUnlock(t.Context(), "orders/46", "test"); err != nil {
					t.Fatal(err)
				}
				return l.Unlock(t.Context())
			},
			is:    []error{quorum.ErrNotHeld},
			says:  `quorumlock: lock "orders/46" not released on a quorum: no longer held on `,
			first: quorum.ErrNotHeld,
		},
		{
			name: "MutexAll",
			op: func(t *testing.T) error {
				hold(t, holder, "orders/48")
				m, _ := dialAddrs(t, live).MutexAll([]string{"orders/47", "orders/48"})
				_, err := m.TryLock(t.Context())
				return err
			},
			is:    []error{quorum.ErrNotObtained, quorum.ErrTaken},
			says:  `quorumlock: lock "orders/47,orders/48" not obtained: "orders/48": held by another owner on `,
			first: quorum.ErrTaken,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op(t)
			if err == nil {
				t.Fatal("no error")
			}
			t.Logf("%+v", err)
			testutil.CheckOneLine(t, err)
			if !strings.HasPrefix(err.Error(), tc.says) {
				t.Errorf("error %q does not start with %q", err, tc.says)
			}
			for _, want := range tc.is {
				if !errors.Is(err, want) {
					t.Errorf("errors.Is(err, %v) = false: %v", want, err)
				}
			}
			for _, bad := range tc.isnt {
				if errors.Is(err, bad) {
					t.Errorf("errors.Is(err, %v) = true: %v", bad, err)
				}
			}
			var qe *quorum.Error
			var ne *quorum.NodeError
			if !errors.As(err, &qe) || !errors.As(err, &ne) {
				t.Fatalf("no *Error or *NodeError behind %v", err)
			}
			if !errors.Is(ne, tc.first) {
				t.Errorf("the first node error is %v, want one wrapping %v", ne, tc.first)
			}
			nodes := qe.Nodes()
			if len(nodes) == 0 || nodes[0] != ne {
				t.Errorf("Nodes() = %v does not start with errors.As's %v", nodes, ne)
			}
			if len(qe.Unwrap()) < 2 {
				t.Errorf("Unwrap() = %v", qe.Unwrap())
			}
			if long := fmt.Sprintf("%+v", err); strings.Count(long, "\n") != len(nodes) {
				t.Errorf("%%+v wants one line per node error (%d): %s", len(nodes), long)
			}
		})
	}
}

// WithDialCheck: three dead nodes fail Dial, with nothing left running;
// one dead node of three does not.
func TestDialCheck(t *testing.T) {
	dead := []string{testutil.RefusedAddr(t), testutil.RefusedAddr(t), testutil.RefusedAddr(t)}
	c, err := quorum.Dial(strings.Join(dead, ","), quorum.WithDialCheck(time.Second))
	if err == nil {
		c.Close()
		t.Fatal("Dial of three dead nodes with WithDialCheck succeeded")
	}
	t.Logf("%+v", err)
	testutil.CheckOneLine(t, err)
	var ne *quorum.NodeError
	if !errors.Is(err, quorum.ErrUnreachable) || !errors.As(err, &ne) || !errors.Is(ne, syscall.ECONNREFUSED) {
		t.Errorf("Dial: %v", err)
	}
	var qe *quorum.Error
	if !errors.As(err, &qe) || len(qe.Nodes()) != 3 {
		t.Errorf("want the three nodes' errors: %+v", err)
	}
	if leaked := leakcheck.Wait(5 * time.Second); len(leaked) > 0 {
		t.Errorf("a failed Dial left %d goroutines:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}

	servers := localredis.StartNT(t, 2, localredis.Config{})
	c, err = quorum.Dial(strings.Join([]string{servers[0].Addr(), dead[0], servers[1].Addr()}, ","), quorum.WithDialCheck(time.Second))
	if err != nil {
		t.Fatalf("Dial with two of three nodes up: %v", err)
	}
	c.Close()

	// Off by default: a client may start before its nodes.
	c, err = quorum.Dial(strings.Join(dead, ","))
	if err != nil {
		t.Fatalf("Dial without WithDialCheck: %v", err)
	}
	c.Close()
}

// Every option's error names that option, on one line.
func TestOptionErrorsNameTheOption(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	for _, tc := range []struct {
		name string
		opts []quorum.Option
	}{
		{"WithTTL", []quorum.Option{quorum.WithTTL(-time.Second)}},
		{"WithTTL", []quorum.Option{quorum.WithTTL(time.Millisecond)}},
		{"WithDriftFactor", []quorum.Option{quorum.WithDriftFactor(1.5)}},
		{"WithPolicy", []quorum.Option{quorum.WithPolicy(nil)}},
		{"WithAttemptTimeout", []quorum.Option{quorum.WithAttemptTimeout(0)}},
		{"WithReleaseTimeout", []quorum.Option{quorum.WithReleaseTimeout(-1)}},
		{"WithRetryInterval", []quorum.Option{quorum.WithRetryInterval(0)}},
		{"WithDialCheck", []quorum.Option{quorum.WithDialCheck(-time.Second)}},
		{"WithLabel", []quorum.Option{quorum.WithLabel("a\x00b")}},
		{"WithReplicaAck", []quorum.Option{quorum.WithReplicaAck(0, time.Millisecond)}},
		{"WithReplicaAck", []quorum.Option{quorum.WithReplicaAck(1, time.Hour)}},
		{"WithRestartDelay", []quorum.Option{quorum.WithRestartDelay(-time.Second)}},
	} {
		c, err := quorum.Dial(s.Addr(), tc.opts...)
		if err == nil {
			c.Close()
			t.Errorf("%s: Dial accepted a bad value", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: the error does not name it: %v", tc.name, err)
		}
		testutil.CheckOneLine(t, err)
	}

	c := dialAddrs(t, []string{s.Addr()})
	for _, tc := range []struct {
		name string
		opts []quorum.Option
	}{
		{"WithTTL", []quorum.Option{quorum.WithTTL(-time.Second)}},
		{"WithTTL", []quorum.Option{quorum.WithTTL(time.Millisecond)}},
		{"WithLeaseTime", []quorum.Option{quorum.WithLeaseTime(-time.Second)}},
		{"WithLeaseTime", []quorum.Option{quorum.WithLeaseTime(time.Millisecond)}},
		{"WithOwner", []quorum.Option{quorum.WithOwner("a\x00b")}},
	} {
		_, err := c.Mutex("opt", tc.opts...)
		if err == nil {
			t.Errorf("%s: Mutex accepted a bad value", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: the error does not name it: %v", tc.name, err)
		}
		testutil.CheckOneLine(t, err)
	}
}
