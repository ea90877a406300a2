package quorum

import (
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
)

// TestDueQueue: steps run in the order they fall due whatever the order
// they were queued in, a cancelled step never runs, moving a step earlier
// re-arms the timer, and the queue is empty and disarmed once every step
// ran.
func TestDueQueue(t *testing.T) {
	ran := make(chan *Lease, 8)
	q := &dueQueue{run: func(l *Lease) { ran <- l }}
	lease := func() *Lease { return &Lease{qi: -1} }
	a, b, c, gone, moved := lease(), lease(), lease(), lease(), lease()
	q.schedule(moved, time.Hour)
	q.schedule(a, 120*time.Millisecond)
	q.schedule(gone, 10*time.Millisecond)
	q.schedule(b, 40*time.Millisecond)
	q.schedule(c, 80*time.Millisecond)
	q.cancel(gone)
	q.schedule(moved, 160*time.Millisecond) // from an hour to before nothing else: Fix, no re-arm needed
	want := []*Lease{b, c, a, moved}
	names := map[*Lease]string{a: "a", b: "b", c: "c", gone: "cancelled", moved: "moved"}
	for i, w := range want {
		select {
		case got := <-ran:
			if got != w {
				t.Fatalf("step %d: ran %s, want %s", i, names[got], names[w])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("step %d (%s) never ran", i, names[w])
		}
	}
	select {
	case got := <-ran:
		t.Fatalf("%s ran after every queued step", names[got])
	case <-time.After(50 * time.Millisecond):
	}
	// A step moved earlier than the armed time re-arms the timer.
	d := lease()
	q.schedule(d, time.Hour)
	q.schedule(d, 10*time.Millisecond)
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a step moved from an hour to 10 ms did not run")
	}
	// fire disarms after starting the step: look until it has.
	testutil.Eventually(t, 5*time.Second, func() error {
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(q.h) != 0 || !q.armed.IsZero() {
			return fmt.Errorf("after every step ran: %d queued, armed for %v; want none", len(q.h), q.armed)
		}
		return nil
	})
	q.mu.Lock()
	defer q.mu.Unlock()
	for l, n := range names {
		if l.qi != -1 {
			t.Errorf("%s still has heap index %d", n, l.qi)
		}
	}
}
