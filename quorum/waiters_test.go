package quorum_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// Queued counts the waiters in a fair lock's line, 0 for a plain lock.
func TestQueued(t *testing.T) {
	servers := localredis.StartNT(t, 3, localredis.Config{})
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr())
	}
	c := dialT(t, strings.Join(addrs, ","), quorum.WithTTL(5*time.Second))
	ctx := t.Context()
	f, _ := c.FairMutex("queued/fair")
	held, err := f.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Mutex("queued/plain")
	pl, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Unlock(context.Background())
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	for range 2 {
		go func() {
			if l, err := f.Lock(wctx); err == nil {
				l.Unlock(context.Background())
			}
			done <- struct{}{}
		}()
	}
	defer func() { cancel(); <-done; <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		q, err := c.Admin().Queued(ctx, "queued/fair", "queued/plain", "queued/none")
		if err != nil {
			t.Fatal(err)
		}
		if q[1] != 0 || q[2] != 0 {
			t.Fatalf("plain or absent lock has waiters: %v", q)
		}
		if q[0] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Queued = %v, want 2 waiters on the fair lock", q)
		}
		time.Sleep(20 * time.Millisecond) // poll: waiters join the line in the background
	}
	held.Unlock(ctx)
}
