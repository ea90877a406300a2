package quorum

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestMutexAllOfResources(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients)
	ctx := t.Context()
	both, err := c.MutexAll([]string{"acct/1", "acct/2"})
	if err != nil {
		t.Fatal(err)
	}
	one := mustMutex(t, c, "acct/2")
	hold, err := one.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := both.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("MutexAll got both while acct/2 was held: %v", err)
	}
	// The failed attempt gave acct/1 back (sub-locks still in flight when the
	// outcome was decided are given back as they answer: well before the
	// 10 s TTL).
	first := mustMutex(t, c, "acct/1")
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	l1, err := first.Lock(wctx)
	if err != nil {
		t.Fatalf("acct/1 not free after a failed MutexAll attempt: %v", err)
	}
	_ = l1.Unlock(ctx)
	_ = hold.Unlock(ctx)
	l, err := both.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("acct/1 free while the MutexAll holds it: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l2, err := one.TryLock(ctx); err != nil {
		t.Fatalf("acct/2 not free after MutexAll unlock: %v", err)
	} else {
		_ = l2.Unlock(ctx)
	}
}

// Fencing tokens strictly increase across successive holders, across clients.
func TestFencingTokensIncrease(t *testing.T) {
	_, clients := cluster(t, 5)
	ctx := t.Context()
	var (
		mu     sync.Mutex
		last   int64
		tokens int
	)
	var wg sync.WaitGroup
	for k := range 3 {
		c := newClient(t, clients, WithFencing(true), WithTTL(5*time.Second))
		m := mustMutex(t, c, "fenced")
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 30 {
					l, err := m.Lock(ctx)
					if err != nil {
						t.Errorf("client %d: %v", k, err)
						return
					}
					mu.Lock()
					if l.Token() <= last {
						t.Errorf("token %d after %d", l.Token(), last)
					}
					last = l.Token()
					tokens++
					mu.Unlock()
					_ = l.Unlock(ctx)
				}
			}()
		}
	}
	wg.Wait()
	if tokens != 270 || last < 270 {
		t.Fatalf("%d acquisitions, last token %d", tokens, last)
	}
}
