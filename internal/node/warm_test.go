package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// slowStart is a client of s whose every new connection answers its first
// read (the HELLO handshake go-redis sends on a new connection) only after
// delay, as on a machine too loaded to set a connection up in time; later
// reads are not delayed. dials counts the connections.
func slowStart(t *testing.T, s *localredis.Server, delay time.Duration, dials *atomic.Int32) *redis.Client {
	t.Helper()
	o := Options(s.Addr())
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &testutil.LateFirstRead{Conn: c, Delay: delay}, nil
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

const (
	startDelay   = 300 * time.Millisecond
	callDeadline = 100 * time.Millisecond // a warm call fits, a new connection does not
)

// A call whose deadline is shorter than a new connection's set-up never
// completes on a bare go-redis client: each call gets a new connection,
// times out in its handshake, and the connection is dropped. The node's
// warm-up sets a connection up outside the call's deadline, so the next
// attempt finds a ready one.
func TestWarmUpBreaksTheRedialCircle(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	ctx := t.Context()

	var bareDials atomic.Int32
	bare := slowStart(t, s, startDelay, &bareDials)
	for i := range 3 {
		cctx, cancel := context.WithTimeout(ctx, callDeadline)
		err := bare.Set(cctx, "bare", "v", 0).Err()
		cancel()
		if err == nil {
			t.Fatalf("bare client, call %d: succeeded; want a timeout (each call must dial)", i)
		}
	}
	if got := bareDials.Load(); got < 3 {
		t.Fatalf("bare client: %d connections for 3 calls; want one per call", got)
	}

	var dials atomic.Int32
	n, err := New(slowStart(t, s, startDelay, &dials))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	l := n.Lock("warm", "owner", "a1", false)
	granted, tries := false, 0
	for ; tries < 10 && !granted; tries++ {
		cctx, cancel := context.WithTimeout(ctx, callDeadline)
		granted, _, _, err = l.Acquire(cctx, time.Minute)
		cancel()
		if err != nil && !dropsConn(err) {
			t.Fatalf("try %d: %v", tries, err)
		}
		if !granted {
			time.Sleep(startDelay) // the retry interval of a lock
		}
	}
	if !granted {
		t.Fatalf("no grant in %d tries of %v each (%d connections, %d warm-ups)", tries, callDeadline, dials.Load(), n.warmUps())
	}
	if tries < 2 || n.warmUps() < 1 {
		t.Fatalf("granted at try %d after %d warm-ups; want the cold first try to fail and a warm-up to follow", tries, n.warmUps())
	}
	t.Logf("granted at try %d; %d connections, %d warm-ups", tries, dials.Load(), n.warmUps())
}

// Close cancels a warm-up under way, waits for it, and no failure after it
// starts another (goleak in TestMain checks nothing is left running).
func TestCloseStopsWarmUps(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	var dials atomic.Int32
	n, err := New(slowStart(t, s, startDelay, &dials))
	if err != nil {
		t.Fatal(err)
	}
	l := n.Lock("warm", "owner", "a1", false)
	cctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	_, _, _, err = l.Acquire(cctx, time.Minute)
	cancel()
	if !dropsConn(err) {
		t.Fatalf("acquire under 1 ms on a slow-starting client: %v; want a deadline error", err)
	}
	if n.warmUps() != 1 {
		t.Fatalf("%d warm-ups after a timed-out call; want 1", n.warmUps())
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n.warmer.mu.Lock()
	running := n.warmer.done != nil
	n.warmer.mu.Unlock()
	if running {
		t.Fatal("a warm-up is still recorded as running after Close")
	}
	cctx, cancel = context.WithTimeout(t.Context(), time.Millisecond)
	_, _, _, _ = l.Acquire(cctx, time.Minute)
	cancel()
	if n.warmUps() != 1 {
		t.Fatalf("%d warm-ups after Close and another timed-out call; want still 1", n.warmUps())
	}
}

func TestDropsConn(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{redis.Nil, false},
		{errors.New("ERR wrong number of arguments"), false},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("node: %w", context.Canceled), true},
		{timeout, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, false},
	} {
		if got := dropsConn(tt.err); got != tt.want {
			t.Errorf("dropsConn(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
