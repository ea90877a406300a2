package quorum

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/drift"
	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/multilock"
)

// mutexConfig is what the options given to a lock's constructor set.
type mutexConfig struct {
	owner     string
	leaseTime time.Duration
	ttl       time.Duration // WithTTL given to the lock; 0: the client's
}

// WithOwner makes acquisitions reentrant for owner: a second Lock by the same
// owner while it holds the lock is granted and counted, and each lease's
// Unlock gives back one count. Without it every acquisition is its own owner
// (not reentrant). Owners are explicit identities (a worker id, a request
// id), never goroutine identity.
// It applies to one lock, not to the client.
func WithOwner(owner string) Option {
	return func(c *config) { c.onlyLock("WithOwner"); c.lock.owner = owner }
}

// WithLeaseTime gives leases a fixed lifetime: no watchdog renews them, and
// they end (Done closes, Err is ErrLeaseExpired) at their validity unless
// Extend is called. Default 0: the TTL (WithTTL) with watchdog renewal.
// It applies to one lock, not to the client.
func WithLeaseTime(d time.Duration) Option {
	return func(c *config) { c.onlyLock("WithLeaseTime"); c.lock.leaseTime = d }
}

// Mutex is a named lock on the client's quorum: immutable configuration, safe
// for concurrent use. Each successful Lock or TryLock returns its own Lease.
type Mutex struct {
	c     *Client
	names []string
	cfg   mutexConfig
	kind  lockKind
	keys  [][]node.Keys // per name, per node: computed once, not per attempt
	// live counts this handle's leases that have not ended (Client.track,
	// untrack). While one lives, a new attempt on the handle expects the
	// lock held (node.Lock.ExpectHeld): in a hand-off between goroutines
	// of one client, the one that just unlocked re-enters Lock, and its
	// first try skips a SET NX that would fail. A waiting Lock's later
	// tries expect it too, but for a woken one (see build).
	live atomic.Int32
	// holding counts the live leases not being released: Unlock (or the
	// lease's end) counts one down before its release is sent. While one
	// holds, an unlock message that wakes a waiter of a Mutex is the late
	// copy of a release the lease's own Lock followed (every node
	// publishes one; the first woke that Lock, the later ones wake the
	// next waiter): the waiter keeps waiting instead of trying (Lock).
	holding atomic.Int32
	// wokenLost: the last try of a waiter woken by an unlock message was
	// refused, so another client's waiter took the lock (contention across
	// clients): woken tries go straight to the acquire script until one
	// wins again (see build).
	wokenLost atomic.Bool
}

// Mutex returns the lock called name.
func (c *Client) Mutex(name string, opts ...Option) (*Mutex, error) {
	return c.newMutex([]string{name}, opts)
}

// MutexAll returns one lock over several resource names: an acquisition
// holds all of them (each on the client's quorum) or none. (It is not the
// MultiLock policy, All, which asks every node for one name.)
func (c *Client) MutexAll(names []string, opts ...Option) (*Mutex, error) {
	if len(names) == 0 {
		return nil, errors.New("quorumlock: MutexAll needs at least one name")
	}
	return c.newMutex(names, opts)
}

func (c *Client) newMutex(names []string, opts []Option) (*Mutex, error) {
	return c.buildMutex(names, opts, checkLockName)
}

// buildMutex makes the Mutex of names; check says what is wrong with a name
// (an election may take the names a lock may not).
func (c *Client) buildMutex(names []string, opts []Option, check func(string) error) (*Mutex, error) {
	m := &Mutex{c: c, names: append([]string(nil), names...), kind: plainLock{}}
	var err error
	if m.cfg, err = lockOptions(opts); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, n := range m.names {
		if err := check(n); err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, fmt.Errorf("quorumlock: lock name %q given twice", n)
		}
		seen[n] = true
	}
	if strings.ContainsRune(m.cfg.owner, 0) {
		return nil, errors.New("quorumlock: WithOwner: the owner must not contain a NUL byte")
	}
	if m.cfg.leaseTime < 0 {
		return nil, fmt.Errorf("quorumlock: WithLeaseTime(%v): the lease time must not be negative (0: renewed by the watchdog)", m.cfg.leaseTime)
	}
	if err := checkMaxTTL("WithLeaseTime", m.cfg.leaseTime); err != nil {
		return nil, err
	}
	if m.cfg.leaseTime > 0 {
		if err := drift.Check(m.cfg.leaseTime, c.cfg.factor); err != nil {
			return nil, optionErr(fmt.Sprintf("WithLeaseTime(%v)", m.cfg.leaseTime), err)
		}
	}
	if err := checkLockTTL(m.cfg.ttl, c.cfg.factor); err != nil {
		return nil, err
	}
	m.keys = make([][]node.Keys, len(m.names))
	for j, name := range m.names {
		m.keys[j] = make([]node.Keys, len(c.nodes))
		for i, n := range c.nodes {
			m.keys[j][i] = n.ReusedKeys(name)
		}
	}
	return m, nil
}

// name is the lock's name (names joined by "," for a MutexAll).
func (m *Mutex) name() string { return strings.Join(m.names, ",") }

func (m *Mutex) ttl() time.Duration {
	if m.cfg.leaseTime > 0 {
		return m.cfg.leaseTime
	}
	if m.cfg.ttl > 0 {
		return m.cfg.ttl
	}
	return m.c.cfg.ttl
}

func (m *Mutex) owner() string {
	if m.cfg.owner != "" {
		return m.cfg.owner
	}
	return m.c.next()
}

// attempt is the id of a Lock or TryLock call's try-th attempt (from 1).
// An owner this client made (no WithOwner) is used by that call alone, so
// owner.try is unique, and it is short: the fast path's value is the
// attempt id alone (node.FastValue). An owner given with WithOwner may be
// used by other calls and clients at once; its attempts get ids of their
// own (id:seq).
func (m *Mutex) attempt(owner string, try int) string {
	if m.cfg.owner != "" {
		return m.c.next()
	}
	return owner + "." + strconv.FormatUint(uint64(try), 36)
}

// build makes the sub-lock tree of one attempt, for every kind of lock:
// one multilock over the nodes per name (node i's share from nodeLock, by
// the lock's kind, behind the safety gate); for several names, an All
// multilock over those. k is the attempt's kind: m's, or a FairMutex
// attempt's.
func (m *Mutex) build(owner string, try int, woken bool, k lockKind) (*multilock.MultiLock, error) {
	c := m.c
	attempt := m.attempt(owner, try)
	c.mlOptsOnce.Do(c.buildMLOpts)
	// A first try while a lease of this handle lives expects the lock held
	// (live). So does a try after the first that no unlock message
	// prompted (the wait timed out: the lock is probably still held), and
	// one that a message prompted while woken tries of this handle lose to
	// other clients (wokenLost): a SET NX would fail and cost a round trip
	// before the script, which grants a free lock as well. A woken try
	// otherwise sends SET NX: this client's unlock message woke only it,
	// and the lock was just released.
	var held bool
	if woken {
		held = m.wokenLost.Load()
	} else {
		held = try > 1 || m.live.Load() > 0
	}
	perName := func(j int) (*multilock.MultiLock, error) {
		ls := make([]multilock.Locker, len(c.nodes))
		for i := range c.nodes {
			ls[i] = c.gateLock(i, k.share(m, i, j, owner, attempt, held))
		}
		if k.fenced() {
			return multilock.New(ls, c.mlOptsFenced...)
		}
		return multilock.New(ls, c.mlOpts...)
	}
	if len(m.names) == 1 {
		return perName(0)
	}
	subs := make([]multilock.Locker, len(m.names))
	for i := range m.names {
		s, err := perName(i)
		if err != nil {
			return nil, err
		}
		subs[i] = namedLock{s, strconv.Quote(m.names[i])}
	}
	return multilock.New(subs, c.mlOptsAll...)
}

// namedLock is one name's multilock inside a MutexAll, called by that
// name (quoted) in errors and votes instead of by its nodes.
type namedLock struct {
	*multilock.MultiLock
	name string
}

func (n namedLock) String() string { return n.name }

// buildMLOpts makes the multilock options once per client: they only depend
// on its configuration, and building them per attempt cost allocations on
// the hot path.
func (c *Client) buildMLOpts() {
	base := []multilock.Option{
		multilock.WithPolicy(c.cfg.policy),
		multilock.WithDriftFactor(c.cfg.factor),
		multilock.WithClock(c.cfg.clock),
		multilock.WithReleaseTimeout(c.cfg.releaseTimeout),
		multilock.WithTracker(&c.wg),
		multilock.WithWorkers(c.workers),
		// Each attempt is bounded by the attempt timeout from its start
		// (Mutex.try).
		multilock.WithAttemptTimeout(c.cfg.attemptTimeout),
	}
	c.mlOpts = append(base[:len(base):len(base)], multilock.WithFencing(c.cfg.fencing))
	// An election's term is a fencing token whatever the client's option.
	c.mlOptsFenced = append(base[:len(base):len(base)], multilock.WithFencing(true))
	// The members fence themselves; the outer All only groups them.
	c.mlOptsAll = append(base[:len(base):len(base)], multilock.WithPolicy(All))
}

// try makes one attempt of kind k bounded by the attempt timeout; every
// lock kind attempts through it. After a failure, wait is the holders'
// shortest remaining claim (0 when unknown), or -1 when some nodes granted.
func (m *Mutex) try(ctx context.Context, owner string, try int, woken bool, k lockKind) (*multilock.MultiLock, time.Duration, error) {
	if m.c.closed.Load() {
		return nil, 0, m.notObtained(ErrClosed)
	}
	ml, err := m.build(owner, try, woken, k)
	if err != nil {
		return nil, 0, err
	}
	// The multilock bounds the attempt by the attempt timeout from the
	// start it reads anyway (multilock.WithAttemptTimeout, buildMLOpts):
	// with DeadlineBound nodes, no timer, allocation or clock reading.
	_, wait, _, err := m.observedAcquire(ctx, ml)
	if err != nil {
		err = m.named(markUnanswered(withCtxErr(ctx, err)))
		err = markPermanent(err, m.c.cfg.policy.FailedLocksLimit(len(m.c.nodes)))
		for _, o := range ml.Outcomes() {
			if o.Granted {
				// Some nodes granted, too few: a split vote between
				// contenders, or another owner keeps a quorum. Its
				// rollback wakes no waiter (multilock.Rollbacker), so
				// wait -1 tells Lock to back off and look again soon.
				wait = -1
				break
			}
		}
		return nil, wait, err
	}
	return ml, 0, nil
}

// givesUp reports whether a failed try ends a Lock (Mutex's or
// FairMutex's): the caller gave up, the client is closed, or something
// other than contention went wrong. It returns the error Lock returns then,
// with ctx's error joined when ctx ended (try joins it when it saw it, but
// ctx may end just after).
func givesUp(ctx context.Context, err error) (bool, error) {
	if ctx.Err() != nil {
		return true, withCtxErr(ctx, err)
	}
	return !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrClosed) || errors.Is(err, ErrPermanent), err
}

// TryLock tries once, on every node in parallel, and returns a lease or an
// *Error wrapping ErrNotObtained (with per-node detail). It never waits for
// the lock; it takes at most the attempt timeout.
func (m *Mutex) TryLock(ctx context.Context) (lease *Lease, err error) {
	defer m.observeAcquire(ctx, m.c.observedNow(), &lease, &err)
	owner := m.owner()
	ml, _, err := m.try(ctx, owner, 1, false, m.kind)
	if err != nil {
		return nil, err
	}
	return m.newLease(ml, owner)
}

// Lock waits until the lock is obtained or ctx ends. While it waits it
// listens for unlock messages on every node (pub/sub) and tries again on the
// first one; when none arrives (messages are lost when a connection drops)
// it tries again after the holder's remaining TTL or the jittered retry
// interval, whichever comes first. A cancelled wait reports an *Error
// wrapping ErrNotObtained, each node's most telling error across the
// attempts, and ctx.Err().
func (m *Mutex) Lock(ctx context.Context) (lease *Lease, err error) {
	defer m.observeAcquire(ctx, m.c.observedNow(), &lease, &err)
	owner := m.owner()
	w := &mutexWait{m: m, owner: owner, tries: 1}
	k := m.kind
	if _, plain := k.(plainLock); plain {
		// From its first try, a node that refuses the call queues it in
		// the name's line, ordered by the time the call started (the
		// same on every node; the client's channel and the waiter's
		// number break ties), so a release wakes the head alone.
		w.seq = node.NextWaiter()
		w.line.place.Set(m.c.line.channel, w.seq, time.Now().UnixMicro())
		w.queued = &w.line
		k = w.queued
	}
	ml, hint, err := m.try(ctx, owner, 1, false, k)
	if err == nil {
		return w.lease(ml)
	}
	m.checkSelfWait(ctx, &w.self)
	return waitAfter(ctx, w, backoff{c: m.c}, hint, err)
}

// mutexWait is one Mutex.Lock call's part in the waiting loop. After its
// first refusal it listens for unlock messages on every node.
type mutexWait struct {
	m       *Mutex
	owner   string
	tries   int
	self    selfWait // waiting on a lease of this handle
	wake    chan struct{}
	watches []*node.Watch
	// seq: the waiter's number (node.NextWaiter), a plain Mutex's from
	// its first try (its line place), the other kinds' from listen.
	seq uint64
	// queued: a plain Mutex's waiter's kind (&line), which puts the
	// waiter in each name's line of waiters on a node that refuses it
	// (acquire.lua says when), so a release wakes the head of the line
	// alone (node.LinePlace); nil for the other kinds, whose waiters
	// every release wakes.
	queued      *queuedLock
	line        queuedLock
	lineWatched bool // watchLine ran
}

// inLine reports whether a refusal put this waiter in a line.
func (w *mutexWait) inLine() bool { return w.queued != nil && w.queued.place.Queued() }

func (w *mutexWait) kind() lockKind {
	if w.queued != nil {
		return w.queued
	}
	return w.m.kind
}

func (w *mutexWait) try(ctx context.Context, woken bool) (*multilock.MultiLock, time.Duration, error) {
	m := w.m
	w.tries++
	ml, wait, err := m.try(ctx, w.owner, w.tries, woken, w.kind())
	if woken && wait >= 0 {
		// Won, or refused by a holder: a split vote (wait < 0) tells
		// neither, and leaves the mark as it was.
		m.wokenLost.Store(err != nil)
	}
	if err != nil {
		m.checkSelfWait(ctx, &w.self)
		if w.watches != nil && w.inLine() {
			// Queued by this try, after listen: wait on the line too.
			w.watchLine(nil)
		}
	}
	return ml, wait, err
}

// watchLine watches, once, the client's wait channel on every node (per
// name), where a release that takes the waiter out of a line names it;
// it returns how many of those watches are ready (the client keeps the
// channel subscribed from its first wait on: stand).
func (w *mutexWait) watchLine(ready chan<- struct{}) int {
	if w.lineWatched {
		return 0
	}
	w.lineWatched = true
	m := w.m
	m.c.stand()
	heard := 0
	for _, n := range m.c.nodes {
		for range m.names {
			nw := n.WatchChannel(w.seq, m.c.line.channel, w.wake, ready, false)
			w.watches = append(w.watches, nw)
			if isReady(nw) {
				heard++
			}
		}
	}
	return heard
}

// isReady reports whether nw's channel is subscribed and confirmed.
func isReady(nw *node.Watch) bool {
	select {
	case <-nw.Ready():
		return true
	default:
		return false
	}
}

func (w *mutexWait) lease(ml *multilock.MultiLock) (*Lease, error) { return w.m.newLease(ml, w.owner) }

func (w *mutexWait) listen(ctx context.Context, _ time.Duration) bool {
	if w.watches != nil {
		return false
	}
	m := w.m
	w.wake = make(chan struct{}, 1)
	ready := make(chan struct{}, len(m.c.nodes)*len(m.names))
	if w.queued == nil {
		w.seq = node.NextWaiter() // one number on every node: they wake the same waiter
	}
	// A queued waiter is woken on its client's wait channel (watchLine);
	// one that is not (refused by a holder of its own client: acquire.lua)
	// on the lock's channel, as every waiter of the other kinds, and a
	// force-unlock wakes both. The channel it is woken on now is the one
	// whose subscription counts.
	queued := w.inLine()
	lockReady := ready
	if queued {
		lockReady = nil
	}
	heard := 0 // watches on channels already subscribed and confirmed
	for _, n := range m.c.nodes {
		for _, name := range m.names {
			nw := n.WatchAs(w.seq, name, w.wake, lockReady, m.kind.wakesAll())
			w.watches = append(w.watches, nw)
			if !queued && isReady(nw) {
				heard++
			}
		}
	}
	if queued {
		heard = w.watchLine(ready)
	}
	// An unlock between the failed try and the subscription is not heard:
	// once subscribed, look again before waiting. Not when the channels
	// were already subscribed (other waiters of this client listen, so the
	// watches were ready at once): such an unlock woke one of them, and
	// saving the extra try matters when contenders keep arriving. A
	// queued waiter's channel stays subscribed from the client's first
	// wait on (stand): it looks again only then. A release between its
	// refusal and its watch named it all the same (node.Stand).
	if heard >= m.readyWant() {
		return false
	}
	m.awaitReady(ctx, ready, w.wake)
	return true
}

func (w *mutexWait) signal() <-chan struct{} { return w.wake }

// late: a lease of this handle holds the lock and is not being released,
// so the message is a late copy of the release it followed (holding).
// Not for a queued waiter: a message naming it means a release took it
// out of the line, so it tries (and a refusal puts it back in its place).
func (w *mutexWait) late() bool {
	if w.inLine() {
		return false
	}
	return w.m.kind.exclusive() && w.m.holding.Load() > 0
}

func (w *mutexWait) end(won bool) {
	for _, nw := range w.watches {
		nw.Stop(!won)
	}
	if !won && w.queued != nil {
		w.queued.leave(w.m)
	}
}

// awaitReady waits until, for every name, limit+1 nodes confirmed the
// subscription (then they overlap every quorum a holder can have, so its
// release is heard), an unlock was heard, the retry interval passed (frozen
// nodes never confirm), or ctx ended.
func (m *Mutex) awaitReady(ctx context.Context, ready, signal chan struct{}) {
	want := m.readyWant()
	t := time.NewTimer(m.c.cfg.retryInterval)
	defer t.Stop()
	for got := 0; got < want; {
		select {
		case <-ready:
			got++
		case <-signal:
			// Heard an unlock: try now, and keep the wake-up for later.
			select {
			case signal <- struct{}{}:
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

// readyWant is how many confirmed watches awaitReady waits for.
func (m *Mutex) readyWant() int {
	if len(m.names) > 1 {
		return len(m.c.nodes) * len(m.names) // names are not told apart here: wait for all
	}
	return m.c.cfg.policy.FailedLocksLimit(len(m.c.nodes)) + 1
}
