package quorum

import (
	"container/heap"
	"sync"
	"time"
)

// dueQueue runs each lease's next timed step, a watchdog renewal or the end
// of a fixed lease time, from one timer per client instead of one per
// lease. A lease is queued when it is obtained and taken out when it ends;
// the timer is re-armed only when a step falls due before the time it is
// set for, so a caller that locks and unlocks in a loop pays a heap push and
// pop, not a runtime timer (whose arming wakes the network poller, a
// visible share of a lone Lock+Unlock). Each due step runs in its own
// goroutine, as a time.AfterFunc callback would: a slow renewal never holds
// up another lease's. Nothing runs while nothing is queued; the timer fires
// at most once more after the last lease ends, and finds nothing to do.
type dueQueue struct {
	mu    sync.Mutex
	h     dueHeap
	timer *time.Timer
	armed time.Time    // when timer fires; zero when it is not armed
	run   func(*Lease) // the step (nil: Lease.step); tests set their own
}

// schedule runs l.step after d, replacing the step queued for l, if any.
func (q *dueQueue) schedule(l *Lease, d time.Duration) {
	at := time.Now().Add(d)
	q.mu.Lock()
	l.due = at
	if l.qi >= 0 {
		heap.Fix(&q.h, l.qi)
	} else {
		heap.Push(&q.h, l)
	}
	if q.armed.IsZero() || at.Before(q.armed) {
		q.arm(at, d)
	}
	q.mu.Unlock()
}

// cancel takes l's step out of the queue; a step already started is not
// stopped (Lease.renew checks unlocked, as with Timer.Stop).
func (q *dueQueue) cancel(l *Lease) {
	q.mu.Lock()
	if l.qi >= 0 {
		heap.Remove(&q.h, l.qi)
	}
	q.mu.Unlock()
}

// arm sets the timer to fire at at (d from now). Under q.mu.
func (q *dueQueue) arm(at time.Time, d time.Duration) {
	q.armed = at
	if q.timer == nil {
		q.timer = time.AfterFunc(d, q.fire)
		return
	}
	q.timer.Reset(d)
}

// fire starts every step that is due and re-arms the timer for the next.
func (q *dueQueue) fire() {
	now := time.Now()
	var due []*Lease
	q.mu.Lock()
	q.armed = time.Time{}
	for len(q.h) > 0 && !q.h[0].due.After(now) {
		due = append(due, heap.Pop(&q.h).(*Lease))
	}
	if len(q.h) > 0 {
		at := q.h[0].due
		q.arm(at, at.Sub(now))
	}
	run := q.run
	q.mu.Unlock()
	if run == nil {
		run = (*Lease).step
	}
	for _, l := range due {
		go run(l)
	}
}

// stop disarms the timer (Client.Close, after every lease was cancelled).
func (q *dueQueue) stop() {
	q.mu.Lock()
	if q.timer != nil {
		q.timer.Stop()
	}
	q.armed = time.Time{}
	q.mu.Unlock()
}

// dueHeap orders queued leases by due time; Lease.qi is a lease's index in
// it, -1 when it is not queued.
type dueHeap []*Lease

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].qi, h[j].qi = i, j
}
func (h *dueHeap) Push(x any) {
	l := x.(*Lease)
	l.qi = len(*h)
	*h = append(*h, l)
}
func (h *dueHeap) Pop() any {
	old := *h
	n := len(old)
	l := old[n-1]
	old[n-1] = nil
	l.qi = -1
	*h = old[:n-1]
	return l
}
