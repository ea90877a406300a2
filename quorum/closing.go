package quorum

import (
	"context"
	"fmt"
	"sync"
)

// tracker counts the client's background goroutines (calls left running
// after a decision, releases): a WaitGroup that Close may wait on while a
// call racing Close still adds to it (sync.WaitGroup forbids an Add that
// starts from zero while Wait runs).
type tracker struct {
	mu   sync.Mutex
	n    int
	zero *sync.Cond
}

func (t *tracker) Add(delta int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += delta
	if t.n < 0 {
		panic("quorumlock: negative tracker count")
	}
	if t.n == 0 && t.zero != nil {
		t.zero.Broadcast()
	}
}

func (t *tracker) Done() { t.Add(-1) }

// Wait returns once the count is zero.
func (t *tracker) Wait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.zero == nil {
		t.zero = sync.NewCond(&t.mu)
	}
	for t.n > 0 {
		t.zero.Wait()
	}
}

// errClosedLease is why Close ended a lease.
var errClosedLease = fmt.Errorf("%w: Close ended the lease and released the lock", ErrClosed)

// track registers a new lease so Close can end it; false when the client
// is closed (the lease must not be handed out).
func (c *Client) track(l *Lease) bool {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	if c.closed.Load() {
		return false
	}
	if c.leases == nil {
		c.leases = map[*Lease]struct{}{}
	}
	c.leases[l] = struct{}{}
	l.m.live.Add(1)
	l.m.holding.Add(1)
	// The label at the first lease and hourly after. Under
	// leaseMu, so a goroutine it starts is counted in wg before Close,
	// which marks the client closed under leaseMu too, can wait for wg.
	c.renewLabel()
	return true
}

// untrack is called once per tracked lease, when it ends (Lease.end).
func (c *Client) untrack(l *Lease) {
	c.leaseMu.Lock()
	delete(c.leases, l)
	c.leaseMu.Unlock()
	l.m.live.Add(-1)
}

// markClosed marks the client closed and returns the leases it still has;
// false when it was closed already.
func (c *Client) markClosed() ([]*Lease, bool) {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	if c.closed.Swap(true) {
		return nil, false
	}
	out := make([]*Lease, 0, len(c.leases))
	for l := range c.leases {
		out = append(out, l)
	}
	return out, true
}

// closeReleasers bounds the releases Close runs at once. A goroutine and
// a context per lease would cost memory in proportion to the leases held
// (a client may hold a great many); a few hundred at once already fill the
// nodes' pipelines.
var closeReleasers = 256

// endLeases ends every lease (Done closes, Err wraps ErrClosed) and gives
// each lock back, at most closeReleasers at a time, each within the
// release timeout.
func (c *Client) endLeases(leases []*Lease) {
	work := make(chan *Lease)
	var wg sync.WaitGroup
	for range min(len(leases), closeReleasers) {
		wg.Go(func() {
			for l := range work {
				ctx, cancel := context.WithTimeout(context.Background(), c.cfg.releaseTimeout)
				l.closeByClient(ctx)
				cancel()
			}
		})
	}
	for _, l := range leases {
		work <- l
	}
	close(work)
	wg.Wait()
}

// closeByClient stops the lease's timer and any renewal under way, ends it
// with errClosedLease and releases the lock (best effort: a node that does
// not answer within ctx keeps its share until the TTL).
func (l *Lease) closeByClient(ctx context.Context) {
	l.mu.Lock()
	if l.unlocked {
		l.mu.Unlock()
		return
	}
	l.unlocked, l.closed = true, true
	l.m.c.due.cancel(l)
	l.mu.Unlock()
	l.renewing.Wait()
	ended := l.Err()
	l.end(errClosedLease) // the critical section is told first
	if ended == nil {
		_, _ = l.observedRelease(ctx, nil)
	}
}
