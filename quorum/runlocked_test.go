package quorum

import (
	"context"
	"errors"
	"github.com/quorumlock/quorumlock/quorum/admin"
	"testing"
	"time"
)

// Do releases the lock however fn returns: nil, an error, a panic.
func TestDoReleases(t *testing.T) {
	_, clients := cluster(t, 3)
	// All: Unlock returns once every node released, so Inspect right after
	// sees none (a Majority release returns at 2 of 3).
	c := newClient(t, clients, WithTTL(2*time.Second), WithPolicy(All))
	m := mustMutex(t, c, "do")
	errWork := errors.New("work failed")
	tests := []struct {
		name    string
		fn      func(ctx context.Context) error
		wantErr error
		panics  bool
	}{
		{name: "nil", fn: func(context.Context) error { return nil }},
		{name: "error", fn: func(context.Context) error { return errWork }, wantErr: errWork},
		{name: "panic", fn: func(context.Context) error { panic("boom") }, panics: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := false
			var err error
			func() {
				defer func() {
					r := recover()
					if (r != nil) != tt.panics || (r != nil && r != "boom") {
						t.Fatalf("recovered %v, want panic %v", r, tt.panics)
					}
				}()
				err = Do(t.Context(), m.Lock, func(ctx context.Context, _ *Lease) error {
					ran = true
					// Held while fn runs.
					if ins, _ := c.Admin().Inspect(ctx, "do"); ins.Verdict != admin.HeldByQuorum {
						t.Errorf("inside Do: verdict %q", ins.Verdict)
					}
					return tt.fn(ctx)
				})
			}()
			if !ran {
				t.Fatal("fn did not run")
			}
			if !tt.panics && !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("Do = %v, want %v", err, tt.wantErr)
			}
			if ins, _ := c.Admin().Inspect(t.Context(), "do"); ins.Verdict != admin.Free {
				t.Fatalf("after Do: verdict %q, want free", ins.Verdict)
			}
		})
	}
}

// When the lease is lost while fn runs (an operator forces the lock; the
// watchdog's next renewal finds it gone), fn's context is cancelled with
// ErrLeaseLost and Do reports it even though fn returned nil.
func TestDoCancelsOnLeaseLoss(t *testing.T) {
	_, clients := cluster(t, 3)
	const ttl = 600 * time.Millisecond // renewal every 200 ms
	c := newClient(t, clients, WithTTL(ttl))
	m := mustMutex(t, c, "do-lost")
	var cause error
	err := Do(t.Context(), m.Lock, func(ctx context.Context, _ *Lease) error {
		if _, err := c.Admin().ForceUnlock(ctx, "do-lost", "test"); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(10 * ttl):
			t.Error("fn's context not cancelled after the lease was lost")
		}
		return nil
	})
	if !errors.Is(cause, ErrLeaseLost) {
		t.Fatalf("fn's context cause %v, want ErrLeaseLost", cause)
	}
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Do = %v, want ErrLeaseLost", err)
	}
}

// A caller that cancels stops fn and still releases the lock.
func TestDoCallerCancel(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients, WithTTL(2*time.Second), WithPolicy(All))
	m := mustMutex(t, c, "do-cancel")
	ctx, cancel := context.WithCancel(t.Context())
	err := Do(ctx, m.Lock, func(ctx context.Context, _ *Lease) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
	if ins, _ := c.Admin().Inspect(t.Context(), "do-cancel"); ins.Verdict != admin.Free {
		t.Fatalf("after a cancelled Do: %q", ins.Verdict)
	}
}
