package history

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the one monotonic clock of a run. Now returns the time since the
// run's start; successive calls return strictly increasing values, so that
// stamps taken one after the other are never equal.
type Clock interface {
	Now() time.Duration
}

// MonotonicClock reads Go's monotonic clock. Safe for concurrent use.
type MonotonicClock struct {
	start time.Time
	last  atomic.Int64
}

// NewClock starts a run's clock at the current instant.
func NewClock() *MonotonicClock { return &MonotonicClock{start: time.Now()} }

// Start is the instant the clock counts from.
func (c *MonotonicClock) Start() time.Time { return c.start }

// Now returns the time since Start, at least 1 ns later than any value it
// returned before (the monotonic clock's resolution may be coarser than the
// rate of calls).
func (c *MonotonicClock) Now() time.Duration {
	d := int64(time.Since(c.start))
	for {
		last := c.last.Load()
		next := max(d, last+1)
		if c.last.CompareAndSwap(last, next) {
			return time.Duration(next)
		}
	}
}

// At converts an instant taken with time.Now (for example a lease's validity
// deadline) to the clock's timeline. The zero time maps to 0 ("none").
// Both instants carry monotonic readings when they come from time.Now, so
// the difference ignores wall-clock jumps.
func (c *MonotonicClock) At(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return t.Sub(c.start)
}

// ManualClock is a deterministic clock for tests: it stands still except
// that every Now advances it by 1 ns (so stamps stay strictly increasing),
// and Advance or Set move it forward. Safe for concurrent use.
type ManualClock struct {
	mu sync.Mutex
	t  time.Duration
}

// NewManualClock returns a clock whose first Now returns start.
func NewManualClock(start time.Duration) *ManualClock { return &ManualClock{t: start} }

// Now returns the current time and then advances the clock by 1 ns.
func (c *ManualClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t++
	return t
}

// Advance moves the clock forward by d (negative d is ignored).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.t += d
	}
}

// Set moves the clock to t; it never moves backwards, so an earlier t is
// ignored.
func (c *ManualClock) Set(t time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = max(c.t, t)
}
