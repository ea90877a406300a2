package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/multilock"
)

// ErrNoTicket: a waiter could not take a ticket on a quorum (too few nodes
// answered). Lock keeps trying until its context ends; the error says which
// nodes failed.
var ErrNoTicket = errors.New("quorumlock: no ticket: too few nodes answered; check that a majority of nodes is reachable")

// FairMutex is a named lock on the client's quorum that serves waiters in
// the order they arrived, across every client: first come, first served.
// Like Mutex it is safe for concurrent use, and each Lock or TryLock returns
// its own *Lease (Unlock, Extend, watchdog, fencing token, Done all work
// unchanged). It keeps its waiters' wake channels subscribed between Lock
// calls (for one queue timeout), so keep one FairMutex per name and reuse
// it rather than making one per call.
//
// How it orders waiters (docs/fairness.md has the whole argument):
//
//   - Lock takes a ticket in two phases: it counts the ticket counter up on
//     every node (which also puts it in line there as "taking a ticket"),
//     takes the highest value of a majority, and writes that back
//     set-if-greater on a majority while placing its entry at that ticket.
//     A waiter that starts taking its ticket after another has placed its
//     own on a majority gets a higher ticket.
//   - A node grants only when the lock is free there and the caller is first
//     in its line. A waiter still taking its ticket is in line at the
//     counter value it drew there, so it holds back every waiter it could
//     still end up before (Lamport's bakery). A waiter needs a majority, as
//     usual.
//   - The holder's release wakes exactly the next waiter, on that waiter's
//     own channel, in whatever process it runs.
//   - A waiter refreshes its entry while it waits (every attempt does). An
//     entry not refreshed within the queue timeout (the client's TTL) is
//     dropped, so a dead waiter stops blocking the line. A waiter whose
//     entry is gone from so many nodes that it no longer lives on a majority
//     has lost its place: it leaves and takes a new ticket.
//   - TryLock takes no ticket and is granted only where nobody is in line:
//     it never passes a waiter.
//
// With no faults, acquisitions happen in ticket order. A reentrant
// acquisition (WithOwner, while the owner holds the lock) is granted at
// once, as in Redisson. A plain Mutex of the same name shares the lock (a
// fair grant waits for a plain holder and the reverse), but a plain Mutex
// does not queue: mixing them makes the plain side jump the line.
type FairMutex struct {
	m  *Mutex
	id string // prefix of its wake channels

	// Wake channels are kept subscribed between Lock calls (slots), so a
	// Lock does not subscribe and unsubscribe on every node each time; a
	// slot unused for the queue timeout is given up.
	mu    sync.Mutex
	free  []*fairSlot
	slots int

	// onGrant, when set (tests), is called by Lock with the waiter and
	// ticket that obtained the lock, before Lock returns.
	onGrant func(waiter string, ticket int64)
}

// fairSlot is one wake channel, subscribed on every node, used by one Lock
// call at a time.
type fairSlot struct {
	key     string // the channel is FairKeys.Wake + key
	signal  chan struct{}
	watches []*node.Watch
	// ready counts subscription confirmations; want of them (limit+1
	// nodes) overlap every majority a release reaches.
	ready     chan struct{}
	confirmed int
	want      int
	idle      *time.Timer // gives the slot up when unused
}

// FairMutex returns the fair lock called name. Options are those of Mutex
// (WithOwner, WithLeaseTime, WithTTL).
func (c *Client) FairMutex(name string, opts ...Option) (*FairMutex, error) {
	m, err := c.newMutex([]string{name}, opts)
	if err != nil {
		return nil, err
	}
	return &FairMutex{m: m, id: c.next()}, nil
}

// takeSlot returns a free wake channel, or subscribes a new one.
func (f *FairMutex) takeSlot() *fairSlot {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.free); n > 0 {
		s := f.free[n-1]
		f.free = f.free[:n-1]
		s.idle.Stop() // if it fired meanwhile, dropSlot finds it taken
		return s
	}
	c := f.m.c
	f.slots++
	s := &fairSlot{
		key:    fmt.Sprintf("%s:%d", f.id, f.slots),
		signal: make(chan struct{}, 1),
		ready:  make(chan struct{}, len(c.nodes)),
		want:   c.cfg.policy.FailedLocksLimit(len(c.nodes)) + 1,
	}
	for _, nd := range c.nodes {
		s.watches = append(s.watches, nd.WatchWaiter(f.m.names[0], s.key, s.signal, s.ready))
	}
	return s
}

// putSlot makes s free again; it is given up after the queue timeout
// unless a Lock takes it before.
func (f *FairMutex) putSlot(s *fairSlot) {
	select {
	case <-s.signal: // a wake-up for a waiter that is gone
	default:
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.free = append(f.free, s)
	if s.idle == nil {
		s.idle = time.AfterFunc(f.queueTimeout(), func() { f.dropSlot(s) })
	} else {
		s.idle.Reset(f.queueTimeout())
	}
}

// dropSlot unsubscribes s if it is still free.
func (f *FairMutex) dropSlot(s *fairSlot) {
	f.mu.Lock()
	i := slices.Index(f.free, s)
	if i >= 0 {
		f.free = slices.Delete(f.free, i, i+1)
	}
	f.mu.Unlock()
	if i < 0 {
		return // taken again
	}
	for _, w := range s.watches {
		w.Stop(false)
	}
}

// subscribed reports, without waiting, whether enough nodes confirmed the
// slot's wake channel.
func (s *fairSlot) subscribed() bool {
	for s.confirmed < s.want {
		select {
		case <-s.ready:
			s.confirmed++
		default:
			return false
		}
	}
	return true
}

// awaitSubscribed waits until enough nodes confirmed the wake channel, a
// wake-up came, d passed (frozen nodes never confirm), or ctx ended.
func (s *fairSlot) awaitSubscribed(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for s.confirmed < s.want {
		select {
		case <-s.ready:
			s.confirmed++
		case <-s.signal:
			select { // keep it for the wait
			case s.signal <- struct{}{}:
			default:
			}
			return
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// queueTimeout is how long a waiter's entry lives on a node without being
// refreshed: the client's TTL (WithTTL). A waiter that dies leaves the line
// at most this long after its last refresh, as a holder that dies leaves
// the lock at most one TTL after its last renewal.
func (f *FairMutex) queueTimeout() time.Duration { return f.m.c.cfg.ttl }

// fairWaiter is one ticket's place in line, across the nodes.
type fairWaiter struct {
	node.Waiter
	// placed[i]: node i has the entry at the ticket (attempts refresh it);
	// otherwise attempts place it (Enqueue).
	placed []bool
	// counted[i]: node i's answer counted for the ticket, and its entry has
	// lived there since. While these are a majority, no waiter with a higher
	// ticket can be granted (docs/fairness.md).
	counted []bool
}

// note records what the nodes said about the entry in one attempt.
func (w *fairWaiter) note(fls []*node.FairLock) {
	for i, fl := range fls {
		switch fl.Entry() {
		case node.EntryKept:
			w.placed[i] = true
		case node.EntryNew:
			// Placed now, but not there all along: it may have missed a
			// grant to a later ticket meanwhile.
			w.placed[i], w.counted[i] = true, false
		case node.EntryGone:
			w.placed[i], w.counted[i] = false, false
		}
	}
}

// keeps reports whether the waiter still holds its place: its entry has
// lived on at least need nodes since it took the ticket.
func (w *fairWaiter) keeps(need int) bool {
	n := 0
	for _, c := range w.counted {
		if c {
			n++
		}
	}
	return n >= need
}

// verify checks, after a grant, that the waiter still held its place: its
// entry was there all along on a majority of the nodes its ticket counted
// on. The grant's own answers usually show it; when they do not (grants
// came from nodes where the entry was placed late), it waits up to bound
// for the other nodes' answers to the same attempt. A node that does not
// answer cannot refute it.
func (w *fairWaiter) verify(fls []*node.FairLock, need int, bound time.Duration) bool {
	confirmed := 0
	for i, fl := range fls {
		if w.counted[i] && fl.Entry() == node.EntryKept {
			confirmed++
		}
	}
	if confirmed >= need {
		return true
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	for _, fl := range fls {
		select {
		case <-fl.Answered():
		case <-t.C:
			w.note(fls)
			return w.keeps(need)
		}
	}
	w.note(fls)
	return w.keeps(need)
}

// TryLock tries once and never waits. It takes no ticket: a node grants it
// only when the lock is free there and nobody is in line, so it never
// passes a waiter. It returns a lease or an error wrapping ErrNotObtained.
func (f *FairMutex) TryLock(ctx context.Context) (lease *Lease, err error) {
	defer f.m.observeAcquire(ctx, f.m.c.observedNow(), &lease, &err)
	owner := f.m.owner()
	fa := f.attempt(nil)
	ml, _, err := f.m.try(ctx, owner, 1, false, fa)
	if err != nil {
		return nil, err
	}
	hold(fa.fls)
	return f.m.newLease(ml, owner)
}

// Lock waits in line until the lock is obtained or ctx ends. It takes a
// ticket, then tries on every node whenever it is woken (the previous
// holder's release wakes exactly the first waiter), when the first waiter's
// entry or the holder's claim ends, and at least every retry interval and
// queue timeout/3 (which refreshes its entry). A cancelled wait leaves the
// line and reports an *Error wrapping ErrNotObtained and ctx.Err().
func (f *FairMutex) Lock(ctx context.Context) (lease *Lease, err error) {
	defer f.m.observeAcquire(ctx, f.m.c.observedNow(), &lease, &err)
	c := f.m.c
	if c.closed.Load() {
		return nil, f.m.notObtained(ErrClosed)
	}
	w := &fairWait{f: f, owner: f.m.owner(), slot: f.takeSlot(), need: multilock.Need(c.cfg.policy, len(c.nodes))}
	defer f.putSlot(w.slot)
	return wait(ctx, w, backoff{c: c, max: max(f.queueTimeout()/3, time.Millisecond)})
}

// fairWait is one FairMutex.Lock call's part in the waiting loop: its
// place in line (w, nil until it has a ticket) and its wake channel.
type fairWait struct {
	f          *FairMutex
	owner      string
	slot       *fairSlot
	need       int
	w          *fairWaiter
	tries      int
	subscribed bool // the wake channel was subscribed when the last try began
}

// try takes a ticket when the waiter has none, then makes one attempt in
// line. A waiter that lost its place goes to the back of the line and
// tries again at once.
func (fw *fairWait) try(ctx context.Context, _ bool) (*multilock.MultiLock, time.Duration, error) {
	f, c := fw.f, fw.f.m.c
	for {
		if fw.w == nil {
			w, err := f.join(ctx, fw.slot)
			if err != nil {
				// Too few nodes answered: take a ticket again after a
				// short pause (a slow moment), longer each time.
				fw.subscribed = true
				return nil, -1, err
			}
			fw.w = w
		}
		fw.subscribed = fw.slot.subscribed()
		fa := f.attempt(fw.w)
		fw.tries++
		ml, wait, err := f.m.try(ctx, fw.owner, fw.tries, false, fa)
		fw.w.note(fa.fls)
		if err == nil && !fw.w.verify(fa.fls, fw.need, c.cfg.attemptTimeout) {
			// Granted, but its entry lapsed on so many nodes meanwhile
			// that a later ticket may have been served before it. Give
			// the grant back and go to the back of the line, so
			// acquisitions stay in ticket order.
			rctx, cancel := context.WithTimeout(context.Background(), c.cfg.releaseTimeout)
			_, _ = ml.Release(rctx)
			cancel()
			fw.leave()
			continue
		}
		if err == nil {
			hold(fa.fls)
			if f.onGrant != nil {
				f.onGrant(fw.w.ID, fw.w.Ticket)
			}
			return ml, 0, nil
		}
		if stop, _ := givesUp(ctx, err); !stop && !fw.w.keeps(fw.need) {
			// Its entry expired on too many nodes (it could not refresh
			// it in time): later tickets may have passed it. Go to the
			// back.
			fw.leave()
			continue
		}
		return nil, wait, err
	}
}

// listen: a wake-up sent before the subscription held was not heard; once
// it holds, try again at once.
func (fw *fairWait) listen(ctx context.Context, d time.Duration) bool {
	if fw.subscribed {
		return false
	}
	fw.slot.awaitSubscribed(ctx, d)
	return true
}

func (fw *fairWait) lease(ml *multilock.MultiLock) (*Lease, error) {
	return fw.f.m.newLease(ml, fw.owner)
}
func (fw *fairWait) signal() <-chan struct{} { return fw.slot.signal }
func (fw *fairWait) late() bool              { return false }

// end leaves the line unless the wait won (then the lease's release does).
func (fw *fairWait) end(won bool) {
	if !won {
		fw.leave()
	}
}

func (fw *fairWait) leave() {
	if fw.w != nil {
		fw.f.leave(fw.w)
		fw.w = nil
	}
}

// join makes a new waiter: it listens on the waiter's wake channel on every
// node, then takes a ticket (phase one; phase two is the first attempt,
// which places the entry with mode Enqueue).
func (f *FairMutex) join(ctx context.Context, slot *fairSlot) (*fairWaiter, error) {
	c := f.m.c
	if c.closed.Load() {
		return nil, f.m.notObtained(ErrClosed)
	}
	n := len(c.nodes)
	name := f.m.names[0]
	// The waiter's id names its wake channel (the slot's). Taking the
	// ticket does not wait for a new slot's subscription (that would put
	// the waiter in line later than it arrived); Lock tries once more when
	// the subscription holds, as a wake-up sent before it was lost.
	w := &fairWaiter{
		Waiter:  node.Waiter{ID: node.WaiterID(slot.key, c.next()), Timeout: f.queueTimeout()},
		placed:  make([]bool, n),
		counted: make([]bool, n),
	}

	// Each node may take the whole attempt timeout: a ticket is no grant
	// (no validity runs down), and fanOut returns once a majority answered,
	// so a frozen minority does not hold the waiter back.
	need := multilock.Need(c.cfg.policy, n)
	answers := f.fanOut(ctx, c.cfg.attemptTimeout, need, func(ctx context.Context, nd *node.Node) (int64, error) {
		return nd.TakeTicket(ctx, name, w.ID, w.Timeout)
	})
	var errs []error
	got := 0
	for _, a := range answers {
		if a.err != nil {
			errs = append(errs, a.err)
			continue
		}
		got++
		w.counted[a.i] = true
		w.Ticket = max(w.Ticket, a.v)
	}
	if got < need {
		f.leave(w)
		err := fmt.Errorf("%w (%d of %d nodes answered, %d needed)", ErrNoTicket, got, n, need)
		return nil, f.m.notObtained(append([]error{err, ctx.Err()}, errs...)...)
	}
	return w, nil
}

// fairAttempt is what one FairMutex attempt adds to Mutex's: w's entry is
// placed or refreshed on every node (w nil: TryLock, no entry), and fls
// keeps the attempt's node locks (Mutex.nodeLock fills it), read after the
// attempt for where the entry is and, once granted, to hold.
type fairAttempt struct {
	w   *fairWaiter
	fls []*node.FairLock
}

func (f *FairMutex) attempt(w *fairWaiter) *fairAttempt {
	return &fairAttempt{w: w, fls: make([]*node.FairLock, len(f.m.c.nodes))}
}

// waiter is the entry the attempt places (none for TryLock).
func (fa *fairAttempt) waiter() node.Waiter {
	if fa.w == nil {
		return node.Waiter{}
	}
	return fa.w.Waiter
}

// mode says what node i does with the waiter's entry.
func (fa *fairAttempt) mode(i int) node.QueueMode {
	switch {
	case fa.w == nil:
		return node.NoQueue
	case fa.w.placed[i]:
		return node.Refresh
	case fa.w.counted[i]:
		return node.Place // its entry must be there since the ticket
	}
	return node.Enqueue
}

// hold marks a granted attempt as the holder: from now on its release
// (Unlock) also takes the waiter out of line; before, a release was a
// rollback that keeps the waiter's place.
func hold(fls []*node.FairLock) {
	for _, fl := range fls {
		fl.Hold()
	}
}

// leave takes w out of line on every node, on a fresh context bounded by
// the release timeout.
func (f *FairMutex) leave(w *fairWaiter) {
	c := f.m.c
	name := f.m.names[0]
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.releaseTimeout)
	defer cancel()
	f.fanOut(ctx, c.cfg.releaseTimeout, multilock.Need(c.cfg.policy, len(c.nodes)), func(ctx context.Context, nd *node.Node) (int64, error) {
		return 0, nd.Leave(ctx, name, w.ID, w.Timeout)
	})
}

type fairAnswer struct {
	i   int
	v   int64
	err error
}

// fanOut calls fn on every node at once, each under perNode, and collects
// answers until need succeeded and then a grace as long as that took
// passed (so nodes that answer about as fast count too), every node
// answered, or ctx ended. Calls still running go on in the background,
// counted in the client's WaitGroup, until their own deadline.
//
// Design note: like multilock's fan-out, and unlike the plain ones
// (internal/fanout, on errgroup), it decides early: a ticket counts once a
// majority answered, and errgroup's Wait would hold the waiter for a frozen
// minority's whole deadline.
func (f *FairMutex) fanOut(ctx context.Context, perNode time.Duration, need int, fn func(ctx context.Context, nd *node.Node) (int64, error)) []fairAnswer {
	c := f.m.c
	ch := make(chan fairAnswer, len(c.nodes)) // room for every answer: senders never block
	start := time.Now()
	for i, nd := range c.nodes {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			nctx, cancel := context.WithTimeout(ctx, perNode)
			defer cancel()
			v, err := fn(nctx, nd)
			if err != nil {
				err = &NodeError{Node: nd.Name(), Err: err}
			}
			ch <- fairAnswer{i: i, v: v, err: err}
		}()
	}
	var (
		out   []fairAnswer
		ok    int
		grace <-chan time.Time
	)
	for len(out) < len(c.nodes) {
		select {
		case a := <-ch:
			out = append(out, a)
			if a.err == nil {
				ok++
			}
			if ok == need && grace == nil {
				t := time.NewTimer(max(time.Since(start), time.Millisecond))
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			return out
		case <-ctx.Done():
			return out
		}
	}
	return out
}
