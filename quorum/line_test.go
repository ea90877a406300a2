package quorum

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A Lock refused by another client's holder queues in the name's line on
// every node; when it gives up it leaves the line, so no release spends
// its wake-up on it. Goroutines of one client waiting on their own holder
// leave no line on the nodes.
func TestLockLeavesLineWhenItGivesUp(t *testing.T) {
	servers, clients := cluster(t, 3)
	holder := newClient(t, clients)
	waiter := newClient(t, clients)
	ctx := t.Context()
	held, err := mustMutex(t, holder, "line/leave").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(context.Background())
	line := holder.nodes[0].Keys("line/leave").Lock + ":waiters"
	count := func() (n int64) {
		for _, s := range servers {
			n += s.Client().ZCard(ctx, line).Val()
		}
		return n
	}
	own := mustMutex(t, holder, "line/leave")
	octx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = own.Lock(octx)
	cancel()
	if !errors.Is(err, ErrNotObtained) {
		t.Fatalf("own client's Lock: %v, want ErrNotObtained", err)
	}
	if n := count(); n != 0 {
		t.Fatalf("a waiter of the holder's own client left %d line entries", n)
	}

	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := mustMutex(t, waiter, "line/leave").Lock(wctx)
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); count() != int64(len(servers)); {
		if time.Now().After(deadline) {
			t.Fatalf("waiter of another client queued on %d of %d nodes", count(), len(servers))
		}
		// The line is on the servers: nothing in the client signals the
		// refusal that queued the waiter, so the test polls it.
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if err := <-done; !errors.Is(err, ErrNotObtained) {
		t.Fatalf("waiter: %v, want ErrNotObtained", err)
	}
	for deadline := time.Now().Add(5 * time.Second); count() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d line entries left after the waiter gave up", count())
		}
		// The waiter leaves the line in the background after Lock
		// returned: the servers are polled until it has.
		time.Sleep(5 * time.Millisecond)
	}
}
