package multilock

import (
	"sync"
	"testing"
	"time"
)

// waitIdle waits until w has n idle workers.
func waitIdle(t *testing.T, w *Workers, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for w.idleCount() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle workers, want %d", w.idleCount(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Calls run; a worker that is done waits for the next call (at most max
// wait), the next call reuses it, and Close ends the idle ones. Calls after
// Close still run. goleak in TestMain checks that no worker is left.
func TestWorkers(t *testing.T) {
	w := NewWorkers(2)
	var wg sync.WaitGroup
	ran := make(chan int, 10)
	release := make(chan struct{})
	for i := range 3 {
		wg.Add(1)
		w.Go(func() { defer wg.Done(); <-release; ran <- i })
	}
	if w.idleCount() != 0 {
		t.Fatalf("%d idle while all are busy", w.idleCount())
	}
	close(release)
	wg.Wait()
	waitIdle(t, w, 2) // the third ended: at most max wait

	wg.Add(1)
	w.Go(func() { defer wg.Done(); ran <- 3 })
	wg.Wait()
	waitIdle(t, w, 2) // the call went to an idle worker, which is back

	w.Close()
	if w.idleCount() != 0 {
		t.Fatalf("%d idle after Close", w.idleCount())
	}
	wg.Add(1)
	w.Go(func() { defer wg.Done(); ran <- 4 })
	wg.Wait()
	close(ran)
	seen := map[int]bool{}
	for i := range ran {
		seen[i] = true
	}
	if len(seen) != 5 {
		t.Fatalf("calls that ran: %v", seen)
	}
	if w.idleCount() != 0 {
		t.Fatal("a worker went idle after Close")
	}
}
