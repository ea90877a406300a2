package multilock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// boundLock records the context its calls get; bound says whether it claims
// to end by the deadline on its own (DeadlineBound).
type boundLock struct {
	bound bool
	mu    sync.Mutex
	ctxs  []context.Context
}

func (b *boundLock) BoundByDeadline() bool { return b.bound }

func (b *boundLock) seen(ctx context.Context) {
	b.mu.Lock()
	b.ctxs = append(b.ctxs, ctx)
	b.mu.Unlock()
}

func (b *boundLock) Acquire(ctx context.Context, _ time.Duration) (bool, time.Duration, int64, error) {
	b.seen(ctx)
	return true, 0, 0, nil
}

func (b *boundLock) Extend(ctx context.Context, _ time.Duration) (bool, error) {
	b.seen(ctx)
	return true, nil
}

func (b *boundLock) Release(ctx context.Context) (bool, error) {
	b.seen(ctx)
	return true, nil
}

// Calls of DeadlineBound sub-locks get their deadline without a timer (a
// Done that is the caller's, here none); when any sub-lock is not bound,
// every call gets a context whose Done closes at the deadline.
func TestDeadlineBoundCalls(t *testing.T) {
	for _, n := range []int{1, 3} {
		for _, mixed := range []bool{false, true} {
			locks := make([]*boundLock, n)
			ls := make([]Locker, n)
			for i := range locks {
				locks[i] = &boundLock{bound: !(mixed && i == 0)}
				ls[i] = locks[i]
			}
			var wg sync.WaitGroup
			m, err := New(ls, WithTracker(&wg))
			if err != nil {
				t.Fatal(err)
			}
			if m.BoundByDeadline() == mixed {
				t.Fatalf("n=%d mixed=%v: BoundByDeadline %v", n, mixed, m.BoundByDeadline())
			}
			if ok, _, _, err := m.Acquire(context.Background(), time.Second); !ok || err != nil {
				t.Fatalf("acquire: %v %v", ok, err)
			}
			if ok, err := m.Release(context.Background()); !ok || err != nil {
				t.Fatalf("release: %v %v", ok, err)
			}
			wg.Wait() // calls answered after the decision
			for i, l := range locks {
				if len(l.ctxs) != 2 {
					t.Fatalf("sub-lock %d saw %d calls", i, len(l.ctxs))
				}
				for _, ctx := range l.ctxs {
					dl, ok := ctx.Deadline()
					if !ok || time.Until(dl) <= 0 || time.Until(dl) > time.Second {
						t.Fatalf("n=%d mixed=%v: call without a deadline within the budget: %v %v", n, mixed, dl, ok)
					}
					if (ctx.Done() == nil) != !mixed {
						t.Fatalf("n=%d mixed=%v: Done %v", n, mixed, ctx.Done())
					}
				}
			}
		}
	}
	// Err reports the deadline once it has passed, without a timer.
	c := &deadlineCtx{Context: context.Background(), dl: time.Now().Add(-time.Millisecond)}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline: %v", c.Err())
	}
	c.dl = time.Now().Add(time.Hour)
	if c.Err() != nil {
		t.Fatalf("Err before the deadline: %v", c.Err())
	}
}
