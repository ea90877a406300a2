package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// Close ends every lease of the client: Done closes, Context is cancelled,
// Err wraps ErrClosed, the watchdog stops renewing, and the lock is given
// back, so another client gets it at once instead of never (the watchdog
// used to go on renewing after Close).
func TestCloseEndsLeasesAndReleases(t *testing.T) {
	_, clients := cluster(t, 3)
	a, err := New(clients, WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b := newClient(t, clients, WithTTL(time.Second))
	ctx := t.Context()
	lease, err := mustMutex(t, a, "job").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lctx := lease.Context()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Done():
	default:
		t.Fatal("Done still open after Close")
	}
	if lctx.Err() == nil || !errors.Is(context.Cause(lctx), ErrClosed) {
		t.Errorf("lease context after Close: err %v, cause %v", lctx.Err(), context.Cause(lctx))
	}
	if !errors.Is(lease.Err(), ErrClosed) {
		t.Errorf("lease.Err() = %v, want ErrClosed", lease.Err())
	}
	a.due.mu.Lock()
	if n := len(a.due.h); n != 0 {
		t.Errorf("%d leases still queued for renewal after Close", n)
	}
	a.due.mu.Unlock()
	// Released by Close: another client gets it now, with no wait for the
	// TTL.
	if l2, err := mustMutex(t, b, "job").TryLock(ctx); err != nil {
		t.Fatalf("lock not free after Close: %v", err)
	} else {
		defer l2.Unlock(ctx)
	}
	// Unlock after Close says why, and Lock on the closed client refuses.
	if err := lease.Unlock(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Unlock after Close = %v, want ErrClosed", err)
	}
	if _, err := mustMutex(t, a, "other").TryLock(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("TryLock after Close = %v, want ErrClosed", err)
	}
	if _, err := mustMutex(t, a, "other").Lock(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Lock after Close = %v, want ErrClosed", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A fixed-lease lease, a fair lease and a read lease end with Close as well.
func TestCloseEndsEveryKindOfLease(t *testing.T) {
	_, clients := cluster(t, 3)
	a, err := New(clients, WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	ctx := t.Context()
	fixed, err := mustMutex(t, a, "fixed", WithLeaseTime(time.Minute)).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fm, err := a.FairMutex("fair")
	if err != nil {
		t.Fatal(err)
	}
	fair, err := fm.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := a.RWMutex("rw")
	if err != nil {
		t.Fatal(err)
	}
	read, err := rw.RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]*Lease{"fixed": fixed, "fair": fair, "read": read} {
		if !errors.Is(l.Err(), ErrClosed) {
			t.Errorf("%s: Err() = %v after Close, want ErrClosed", name, l.Err())
		}
	}
	b := newClient(t, clients)
	for _, name := range []string{"fixed", "fair", "rw"} {
		l, err := mustMutex(t, b, name).TryLock(ctx)
		if err != nil {
			t.Errorf("%s not released by Close: %v", name, err)
			continue
		}
		_ = l.Unlock(ctx)
	}
}

// Close racing watchdog renewals (TTL 30 ms: a renewal every 10 ms) and
// Locks in flight, under -race: no data race, every lease ends, and
// nothing is left running (goleak in TestMain). An Unlock racing Close
// reports ErrClosed (it once said "already unlocked" while Close waited for
// a renewal); a 30 ms lease may also be lost on a loaded machine before
// Close, which Unlock reports as ErrLeaseLost, or as ErrNotHeld when the
// keys expired before the watchdog noticed — right, and not what this test
// is about.
func TestCloseRacesWatchdogAndLocks(t *testing.T) {
	_, clients := cluster(t, 3)
	for round := range 20 {
		c, err := New(clients, WithTTL(30*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		var (
			mu     sync.Mutex
			leases []*Lease
			wg     sync.WaitGroup
		)
		for i := range 4 {
			wg.Go(func() {
				m, err := c.Mutex(string(rune('a'+i)) + "-" + string(rune('0'+round%10)))
				if err != nil {
					t.Error(err)
					return
				}
				for {
					l, err := m.TryLock(ctx)
					if errors.Is(err, ErrClosed) {
						return
					}
					if err == nil {
						mu.Lock()
						leases = append(leases, l)
						mu.Unlock()
						time.Sleep(15 * time.Millisecond) // across a renewal
						if err := l.Unlock(ctx); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, multilock.ErrNotHeld) {
							t.Errorf("Unlock: %v", err)
						}
					}
				}
			})
		}
		time.Sleep(time.Duration(20+round) * time.Millisecond) // Close at a moment that varies by round, while the workers lock and renew
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		mu.Lock()
		for _, l := range leases {
			if l.Err() == nil {
				t.Fatalf("round %d: a lease still holds after Close", round)
			}
		}
		mu.Unlock()
	}
}

// releaseSpans records when each release ran, to tell how many overlapped.
type releaseSpans struct {
	mu    sync.Mutex
	spans [][2]time.Time
}

func (r *releaseSpans) Observe(_ context.Context, e observe.Event) {
	if e.Op != observe.OpRelease {
		return
	}
	r.mu.Lock()
	r.spans = append(r.spans, [2]time.Time{e.Start, e.Start.Add(e.Duration)})
	r.mu.Unlock()
}

// peak is the largest number of spans that were running at one instant.
func (r *releaseSpans) peak() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	best := 0
	for _, s := range r.spans {
		n := 0
		for _, o := range r.spans {
			if !o[0].After(s[0]) && o[1].After(s[0]) {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

// Close releases many leases a few at a time (not a goroutine per lease)
// and still ends and gives back every one of them.
func TestCloseReleasesManyLeasesFewAtATime(t *testing.T) {
	defer func(n int) { closeReleasers = n }(closeReleasers)
	closeReleasers = 3
	_, clients := cluster(t, 3)
	spans := &releaseSpans{}
	a, err := New(clients, WithTTL(time.Minute), WithObserver(spans))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b := newClient(t, clients)
	ctx := t.Context()
	const n = 40
	names := make([]string, n)
	leases := make([]*Lease, n)
	for i := range n {
		names[i] = fmt.Sprintf("many-%d", i)
		if leases[i], err = mustMutex(t, a, names[i]).Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for i, l := range leases {
		if !errors.Is(l.Err(), ErrClosed) {
			t.Errorf("lease %s after Close: Err %v, want ErrClosed", names[i], l.Err())
		}
		l2, err := mustMutex(t, b, names[i]).TryLock(ctx)
		if err != nil {
			t.Errorf("%s not given back by Close: %v", names[i], err)
			continue
		}
		_ = l2.Unlock(ctx)
	}
	if got := len(spans.spans); got != n {
		t.Errorf("%d releases observed, want %d", got, n)
	}
	if p := spans.peak(); p > closeReleasers {
		t.Errorf("%d releases ran at once, want at most %d", p, closeReleasers)
	}
}
