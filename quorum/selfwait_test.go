package quorum

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
)

// Do takes any lock kind and hands fn the lease (the fencing token) through
// its context.
func TestDoAnyKindWithLease(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients, WithTTL(2*time.Second), WithFencing(true))
	ctx := t.Context()
	fair, err := c.FairMutex("do/fair")
	if err != nil {
		t.Fatal(err)
	}
	rw, err := c.RWMutex("do/rw")
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for name, l := range map[string]func(context.Context) (*Lease, error){"mutex": mustMutex(t, c, "do/mutex").Lock, "fair": fair.Lock, "rw": rw.Lock, "reader": rw.RLock} {
		err := Do(ctx, l, func(ctx context.Context, lease *Lease) error {
			if lease == nil || lease.Token() <= 0 || lease.Err() != nil {
				return errors.New("no lease with a token in fn's context")
			}
			last = lease.Token()
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if last == 0 {
		t.Fatal("Do ran no function")
	}
}

// A Lock on a handle whose lease this client holds, without WithOwner,
// waits for itself; past one TTL it says so once at Warn.
func TestLockWarnsWhenWaitingOnItself(t *testing.T) {
	_, clients := cluster(t, 3)
	var buf testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c := newClient(t, clients, WithTTL(300*time.Millisecond), WithRetryInterval(100*time.Millisecond), WithLogger(log))
	m := mustMutex(t, c, "self")
	l, err := m.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(context.Background())
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	if _, err := m.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock: %v", err)
	}
	out := buf.String()
	if n := strings.Count(out, "waits for itself"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "lock=self") {
		t.Fatalf("warning lacks level or lock:\n%s", out)
	}
}
