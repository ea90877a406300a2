package multilock

import "sync"

// Workers runs the fan-out's per-sub-lock calls on goroutines kept between
// calls. A new goroutine starts with a small stack, and a go-redis call
// grows it (copying it each time) on every call; a kept goroutine grows it
// once. With many goroutines locking, that growth is a large share of the
// client's CPU.
//
// A call is handed to an idle worker when there is one, else to a new
// goroutine that becomes a worker when it is done; at most max workers wait
// idle, the rest end. Close ends the idle workers; calls handed over after
// Close run on goroutines of their own. The zero value is not usable; make
// one with NewWorkers.
type Workers struct {
	mu     sync.Mutex
	idle   []chan func()
	max    int
	closed bool
}

// NewWorkers returns a pool that keeps at most max idle workers.
func NewWorkers(max int) *Workers { return &Workers{max: max} }

// WithWorkers runs the MultiLock's calls on w instead of a goroutine each.
// The owner of w closes it once no MultiLock uses it (after its tracker's
// Wait, see WithTracker).
func WithWorkers(w *Workers) Option { return func(c *config) { c.workers = w } }

// Go runs f on an idle worker or a new goroutine.
func (w *Workers) Go(f func()) {
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		ch := w.idle[n-1]
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		ch <- f // buffered: never blocks
		return
	}
	w.mu.Unlock()
	go w.run(f)
}

func (w *Workers) run(f func()) {
	var ch chan func()
	for f != nil {
		f()
		w.mu.Lock()
		if w.closed || len(w.idle) >= w.max {
			w.mu.Unlock()
			return
		}
		if ch == nil {
			ch = make(chan func(), 1)
		}
		w.idle = append(w.idle, ch)
		w.mu.Unlock()
		f = <-ch // nil when closed
	}
}

// Close ends the idle workers; busy ones end when their call returns.
func (w *Workers) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, ch := range w.idle {
		close(ch)
	}
	w.idle = nil
}

// idleCount is how many workers wait for a call (for tests).
func (w *Workers) idleCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.idle)
}
