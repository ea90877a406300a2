package quorum

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A Lock that gives up at its deadline returns with ctx ended: a caller
// that checks ctx.Err() after the failure finds it set, even when the
// waiter's own timer came at the deadline before ctx's timer did.
func TestLockGivesUpWithCtxEnded(t *testing.T) {
	_, clients := cluster(t, 1)
	c := newClient(t, clients, WithRetryInterval(5*time.Millisecond))
	m := mustMutex(t, c, "deadline")
	held, err := m.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(context.Background())
	for i := range 40 {
		// The retry interval divides the deadline: the waiter's timer and
		// ctx's fall due together.
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		_, err := m.Lock(ctx)
		cerr := ctx.Err()
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || cerr == nil {
			t.Fatalf("try %d: Lock = %v, then ctx.Err() = %v: want the deadline's error with ctx ended", i, err, cerr)
		}
	}
}
