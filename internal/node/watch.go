package node

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// watch is one waiter's interest in the unlock messages of one lock on one
// node. Waiters on one node share a single pub/sub connection; channels are
// subscribed while someone watches them.
//
// A message wakes the longest-waiting watch of the channel (FIFO within this
// process), plus every watch made with wakeAll (readers of a read-write lock).
// Waking one instead of all avoids a thundering herd and, within a process,
// serves waiters in arrival order.
type Watch struct {
	s         *subscriber
	channel   string
	signal    chan<- struct{}
	wakeAll   bool
	seq       uint64 // waiter number: the order of wake-ups
	ready     chan struct{}
	notify    chan<- struct{} // optional: told once when ready
	signalled bool            // guarded by s.mu
	stand     bool            // Stand's: keeps a named channel subscribed
}

// markReady closes ready once and tells notify. Called with s.mu held.
func (w *Watch) markReady() {
	select {
	case <-w.ready:
		return
	default:
	}
	close(w.ready)
	if w.notify != nil {
		select {
		case w.notify <- struct{}{}:
		default:
		}
	}
}

// Ready is closed once the node confirmed the subscription: an unlock after
// that moment will be seen. A waiter should try the lock once more after
// Ready, because an unlock between its last try and Ready is not seen.
func (w *Watch) Ready() <-chan struct{} { return w.ready }

// Stop ends the watch. With handOn, a wake-up this watch received passes on
// to the next waiter, so a waiter that gives up cannot swallow it; a waiter
// that took the lock passes false.
func (w *Watch) Stop(handOn bool) { w.s.remove(w, handOn) }

// watch registers signal to be notified (non-blocking send) when lock name is
// released on this node. signal should have a buffer of one; several watches
// (one per node) may share it. ready, if not nil, is sent to (non-blocking)
// once the subscription is confirmed; give it a buffer of one per watch to
// count how many nodes are listening.
func (n *Node) watch(name string, signal, ready chan<- struct{}, wakeAll bool) *Watch {
	return n.WatchAs(NextWaiter(), name, signal, ready, wakeAll)
}

var waiterSeq atomic.Uint64

// NextWaiter numbers a waiter. A waiter that watches several nodes passes the
// same number to each (WatchAs): every node then wakes the same
// longest-waiting waiter, instead of each node its own, which would set this
// process's waiters against each other in split votes.
func NextWaiter() uint64 { return waiterSeq.Add(1) }

// WatchAs is Watch for waiter number seq (see NextWaiter): watches are kept
// in the order of their numbers, lowest first.
func (n *Node) WatchAs(seq uint64, name string, signal, ready chan<- struct{}, wakeAll bool) *Watch {
	return n.watchChannel(seq, n.Keys(name).Channel, signal, ready, wakeAll)
}

func (n *Node) watchChannel(seq uint64, channel string, signal, ready chan<- struct{}, wakeAll bool) *Watch {
	w := &Watch{s: n.subscriber(), seq: seq, channel: channel, signal: signal, notify: ready, wakeAll: wakeAll, ready: make(chan struct{})}
	w.s.add(w)
	return w
}

// subscriber is the node's one pub/sub reader, made by the first watch.
func (n *Node) subscriber() *subscriber {
	n.subMu.Lock()
	defer n.subMu.Unlock()
	if n.sub == nil {
		n.sub = newSubscriber(n)
	}
	return n.sub
}

type channelState struct {
	watches   []*Watch
	confirmed bool
	// named: a client's wait channel (Stand), whose messages each name
	// one waiter; a message for a waiter not (yet) watching is kept in
	// the subscriber's early list instead of waking another.
	named bool
}

// Stand keeps channel subscribed on this node until Close, for the waiters
// to come (a WatchChannel of theirs on it is ready at once): a client's
// wait channel (WaitChannel), made once rather than per wait. ready is
// told once the node confirmed it. A message on it wakes the waiter it
// names alone; one naming a waiter that does not watch yet (a release
// between that waiter's refusal and its watch) is kept, and wakes the
// watch made next with that number.
func (n *Node) Stand(channel string, ready chan<- struct{}) *Watch {
	w := &Watch{s: n.subscriber(), channel: channel, notify: ready, ready: make(chan struct{}), stand: true}
	w.s.add(w)
	return w
}

// earlyKept is how many wake-ups for waiters not watching yet a subscriber
// keeps: such a waiter watches within microseconds of its refusal, so a
// few suffice; older ones are of waiters that went away.
const earlyKept = 16

type subscriber struct {
	n    *Node
	ps   *redis.PubSub
	kick chan struct{}
	quit chan struct{}
	// base is cancelled by close, so a subscribe stuck on a frozen node
	// does not hold up Close for its whole timeout.
	base     context.Context
	stopBase context.CancelFunc
	wg       sync.WaitGroup

	mu     sync.Mutex
	chans  map[string]*channelState
	active map[string]bool // subscribed on the connection (as far as we asked)
	closed bool
	// early: waiter numbers that a named channel's message woke before
	// they watched (a ring of earlyKept, 0 empty).
	early     [earlyKept]uint64
	earlyNext int
	heard     atomic.Int64  // monotonic() when the connection last said anything
	every     time.Duration // healthEvery when made
}

func newSubscriber(n *Node) *subscriber {
	s := &subscriber{
		n:      n,
		ps:     n.client.Subscribe(context.Background()),
		kick:   make(chan struct{}, 1),
		quit:   make(chan struct{}),
		chans:  map[string]*channelState{},
		active: map[string]bool{},
	}
	s.base, s.stopBase = context.WithCancel(context.Background())
	s.heard.Store(monotonic())
	s.every = healthEvery
	s.wg.Add(3)
	go s.receive()
	go s.health()
	go s.reconcile()
	return s
}

func (s *subscriber) add(w *Watch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		w.markReady()
		return
	}
	cs := s.chans[w.channel]
	if cs == nil {
		cs = &channelState{}
		s.chans[w.channel] = cs
	}
	// Keep waiter order: almost always an append.
	i := len(cs.watches)
	for i > 0 && cs.watches[i-1].seq > w.seq {
		i--
	}
	cs.watches = slices.Insert(cs.watches, i, w)
	if w.stand {
		cs.named = true
	}
	if cs.confirmed {
		w.markReady()
	}
	if cs.named && w.seq != 0 {
		if i := slices.Index(s.early[:], w.seq); i >= 0 {
			s.early[i] = 0
			w.fire()
		}
	}
	s.poke()
}

func (s *subscriber) remove(w *Watch, handOn bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.chans[w.channel]
	if cs == nil {
		return
	}
	for i, x := range cs.watches {
		if x == w {
			cs.watches = append(cs.watches[:i], cs.watches[i+1:]...)
			break
		}
	}
	if len(cs.watches) == 0 {
		delete(s.chans, w.channel)
		s.poke()
		return
	}
	if handOn && w.signalled {
		s.wake(cs, false)
	}
}

func (s *subscriber) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// wake signals the head watch (or all) and every wakeAll watch.
func (s *subscriber) wake(cs *channelState, all bool) {
	for i, w := range cs.watches {
		if i == 0 || all || w.wakeAll {
			w.fire()
		}
	}
}

// fire signals w (non-blocking). Called with s.mu held.
func (w *Watch) fire() {
	w.signalled = true
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// wakeNamed wakes the watch of a named channel (Stand) whose waiter
// number is payload (decimal: a release that took the head off a lock's
// line, release.lua), and the channel's wakeAll watches. A number no
// watch has is kept for a watch to come (early).
func (s *subscriber) wakeNamed(cs *channelState, payload string) {
	seq, err := strconv.ParseUint(payload, 10, 64)
	if err != nil || seq == 0 {
		return
	}
	for _, w := range cs.watches {
		if w.seq == seq {
			w.fire()
			for _, x := range cs.watches {
				if x.wakeAll && x != w {
					x.fire()
				}
			}
			return
		}
	}
	s.early[s.earlyNext] = seq
	s.earlyNext = (s.earlyNext + 1) % earlyKept
}

// receive reads the connection's messages and wakes waiters, in this
// goroutine: go-redis' PubSub.Channel would add two goroutine hops to each
// wake-up (its reader, then a health check reset per message), on the path
// from an unlock to the next holder. It ends when the PubSub is closed.
func (s *subscriber) receive() {
	defer s.wg.Done()
	failed := false
	for {
		m, err := s.ps.Receive(s.base)
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			// go-redis reconnects on the next Receive; pause when that
			// failed too, as its Channel does.
			if failed {
				select {
				case <-s.quit:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
			failed = true
			continue
		}
		failed = false
		s.heard.Store(monotonic())
		s.dispatch(m)
	}
}

// health pings the connection when nothing was heard for healthEvery, as
// go-redis' Channel does: a connection that died quietly fails the ping's
// write, and go-redis then reconnects (and re-subscribes, which wakes
// every waiter: dispatch).
func (s *subscriber) health() {
	defer s.wg.Done()
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		if time.Duration(monotonic()-s.heard.Load()) < s.every {
			continue
		}
		ctx, cancel := context.WithTimeout(s.base, s.every)
		_ = s.ps.Ping(ctx)
		cancel()
	}
}

// healthEvery is how long the pub/sub connection may stay silent before
// health pings it (go-redis' Channel's default). A variable for a test.
var healthEvery = 3 * time.Second

// dispatch acts on one message of the connection.
func (s *subscriber) dispatch(m any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := m.(type) {
	case *redis.Message:
		if cs := s.chans[m.Channel]; cs != nil {
			if cs.named {
				s.wakeNamed(cs, m.Payload)
			} else {
				s.wake(cs, false)
			}
		}
	case *redis.Subscription:
		if m.Kind != "subscribe" {
			break
		}
		if cs := s.chans[m.Channel]; cs != nil {
			if cs.confirmed {
				// A re-subscription after a reconnect: messages may
				// have been lost meanwhile, so everyone looks again.
				s.wake(cs, true)
			}
			cs.confirmed = true
			for _, w := range cs.watches {
				w.markReady()
			}
		}
	}
}

// reconcile makes the connection's subscriptions follow the channels being
// watched. One goroutine does it, so subscribe and unsubscribe never cross.
func (s *subscriber) reconcile() {
	defer s.wg.Done()
	for {
		select {
		case <-s.quit:
			return
		case <-s.kick:
		}
		s.mu.Lock()
		var sub, unsub []string
		for ch := range s.chans {
			if !s.active[ch] {
				sub = append(sub, ch)
				s.active[ch] = true
			}
		}
		for ch := range s.active {
			if s.chans[ch] == nil {
				unsub = append(unsub, ch)
				delete(s.active, ch)
			}
		}
		s.mu.Unlock()
		// In a set order, not the maps': the same changes send the same
		// commands (a simulation replays its run from a seed).
		slices.Sort(sub)
		slices.Sort(unsub)
		ctx, cancel := context.WithTimeout(s.base, 2*time.Second)
		if len(sub) > 0 {
			if err := s.ps.Subscribe(ctx, sub...); err != nil {
				// Not subscribed: forget it so the next kick retries.
				s.mu.Lock()
				for _, ch := range sub {
					delete(s.active, ch)
				}
				s.mu.Unlock()
				select {
				case <-s.quit:
				case <-time.After(100 * time.Millisecond):
					s.poke()
				}
			}
		}
		if len(unsub) > 0 {
			_ = s.ps.Unsubscribe(ctx, unsub...)
			s.mu.Lock()
			for _, ch := range unsub {
				if cs := s.chans[ch]; cs != nil {
					cs.confirmed = false
				}
			}
			s.mu.Unlock()
		}
		cancel()
	}
}

func (s *subscriber) close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.quit)
	s.stopBase()
	err := s.ps.Close()
	s.wg.Wait()
	return err
}
