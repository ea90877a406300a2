package node

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed fair_lib.lua
	fairLibLua string
	//go:embed fair_ticket.lua
	fairTicketLua string
	//go:embed fair_acquire.lua
	fairAcquireLua string
	//go:embed fair_release.lua
	fairReleaseLua string
	//go:embed fair_leave.lua
	fairLeaveLua string

	// Each fair script is the shared helpers followed by its own body.
	fairTicketScript  = script("fair-ticket", fairLibLua+fairTicketLua)
	fairAcquireScript = script("fair-acquire", promoted(fairLibLua+acquireLibLua+fairAcquireLua))
	fairReleaseScript = script("fair-release", promoted(fairLibLua+fairReleaseLua))
	fairLeaveScript   = script("fair-leave", fairLibLua+fairLeaveLua)
)

// FairKeys are the Redis names a fair lock uses besides Keys(name). They
// share the hash tag {name}, so a Cluster keeps them in the lock's slot.
type FairKeys struct {
	Queue     string // zset waiter → ticket (v−0.5: taking a ticket, −1: left)
	Deadlines string // zset waiter → deadline, ms on the node's clock
	Ticket    string // ticket counter
	Wake      string // prefix of the per-waiter wake channels: Wake + waiter
}

// FairKeys returns the queue key names of fair lock name.
func (n *Node) FairKeys(name string) FairKeys {
	base := n.prefix + "{" + tagged(name) + "}"
	return FairKeys{Queue: base + ":queue", Deadlines: base + ":queue:deadlines", Ticket: base + ":ticket", Wake: base + ":wake:"}
}

// fairKeys is the KEYS list every fair script takes (see fair_lib.lua).
func (n *Node) fairKeys(name string) []string {
	k, f := n.Keys(name), n.FairKeys(name)
	return []string{k.Lock, f.Queue, f.Deadlines, f.Ticket, k.Fence}
}

// Waiter is one place in the line of a fair lock: a waiter id unique per
// ticket, the ticket, and how long its entry lives on a node without being
// refreshed.
type Waiter struct {
	ID      string
	Ticket  int64
	Timeout time.Duration
}

// QueueMode says what a fair acquisition does with the caller's entry.
type QueueMode int

const (
	// NoQueue (TryLock): no entry; grant only when the lock is free and
	// nobody is in line.
	NoQueue QueueMode = iota
	// Enqueue: phase two of the ticket. Write the ticket back set-if-greater
	// and place the entry at it (first contact with this node).
	Enqueue
	// Place: as Enqueue, where the waiter's ticket answer counted: the entry
	// it put in line then must still be there (it is given its ticket);
	// when it is gone, the attempt is refused and Entry reports EntryGone.
	Place
	// Refresh: the entry must still be there; refresh its deadline. When it
	// is gone the attempt is refused and Entry reports EntryGone.
	Refresh
)

func (m QueueMode) arg() string {
	switch m {
	case Enqueue:
		return "enqueue"
	case Place:
		return "place"
	case Refresh:
		return "refresh"
	}
	return "try"
}

// Entry is what a node said about the caller's entry in its last answer.
type Entry int32

const (
	EntryUnknown Entry = iota // no answer yet, or NoQueue
	EntryKept                 // the entry was there (from the ticket or before) and was refreshed
	EntryNew                  // the entry was not there and was placed now
	EntryGone                 // the entry is gone: its deadline passed, or the waiter left
)

func (e Entry) String() string {
	switch e {
	case EntryKept:
		return "kept"
	case EntryNew:
		return "new"
	case EntryGone:
		return "gone"
	}
	return "unknown"
}

// TakeTicket is phase one of a waiter's ticket: it counts the node's ticket
// counter up to v and puts the waiter in line as taking a ticket, which
// holds back every waiter whose ticket is v or more on this node until the
// waiter places its ticket (FairLock with Enqueue or Place), leaves, or
// timeout passes. It returns v; the ticket is the highest v of a majority.
func (n *Node) TakeTicket(ctx context.Context, name, waiter string, timeout time.Duration) (int64, error) {
	return n.evalInt(ctx, fairTicketScript, n.fairKeys(name), waiter, ms(timeout), n.retentionMS())
}

// Leave takes waiter out of the line of fair lock name and wakes the next
// waiter if it was first. A tombstone keeps a late message of the waiter
// from putting it back for timeout.
func (n *Node) Leave(ctx context.Context, name, waiter string, timeout time.Duration) error {
	k, f := n.Keys(name), n.FairKeys(name)
	_, err := n.eval(ctx, fairLeaveScript, n.fairKeys(name), waiter, ms(timeout), f.Wake, k.Channel)
	return err
}

// FairLock returns the handle of one acquisition attempt of fair lock name
// by owner on this node, for waiter w (ignored with NoQueue). The lock hash,
// fencing counter, Extend and Fence are those of a plain lock of the same
// name: a fair grant also waits for a plain holder. What differs is the
// grant (only to the first in line), and the release, which wakes exactly
// the next waiter on its own channel.
func (n *Node) FairLock(name, owner, attempt string, w Waiter, mode QueueMode, fencing bool) *FairLock {
	k, f := n.Keys(name), n.FairKeys(name)
	if mode == NoQueue {
		w = Waiter{}
	}
	return &FairLock{
		l:   n.LockKeys(k, owner, attempt, fencing),
		all: n.fairKeys(name), wake: f.Wake, w: w, mode: mode, answered: make(chan struct{}),
	}
}

// FairLock is one attempt's handle on one node of a fair lock: what the
// multilock core drives. Extend and Fence are the plain lock's.
type FairLock struct {
	l     *Lock // the plain lock's handle: Extend, Fence
	all   []string
	wake  string
	w     Waiter
	mode  QueueMode
	entry atomic.Int32
	held  atomic.Bool

	answered chan struct{} // closed when Acquire returned
	once     sync.Once
}

func (l *FairLock) String() string { return l.l.n.name }

// Extend re-arms the TTL where this attempt holds a share; never acquires.
func (l *FairLock) Extend(ctx context.Context, ttl time.Duration) (bool, error) {
	return l.l.Extend(ctx, ttl)
}

// ExtendChecked is Extend with checks in the same round trip.
func (l *FairLock) ExtendChecked(ctx context.Context, ttl time.Duration, chk Checks) (bool, Checked, error) {
	return l.l.ExtendChecked(ctx, ttl, chk)
}

// Fence writes token back set-if-greater where this attempt's grant stands.
func (l *FairLock) Fence(ctx context.Context, token int64) (bool, error) {
	return l.l.Fence(ctx, token)
}

// FenceChecked is Fence with checks in the same round trip.
func (l *FairLock) FenceChecked(ctx context.Context, token int64, chk Checks) (bool, Checked, error) {
	return l.l.FenceChecked(ctx, token, chk)
}

// Entry is what this node said about the waiter's entry in its answer to
// Acquire (EntryUnknown before the answer).
func (l *FairLock) Entry() Entry { return Entry(l.entry.Load()) }

// Answered is closed once Acquire has returned (with an answer or an
// error): then Entry says what this node said.
func (l *FairLock) Answered() <-chan struct{} { return l.answered }

// Hold marks the attempt as the lock's holder: its Release then also takes
// the waiter out of line. Before Hold, Release gives back a failed
// attempt's grant and keeps the waiter's place.
func (l *FairLock) Hold() { l.held.Store(true) }

// Acquire places or refreshes the waiter's entry and grants when the lock is
// free and the waiter is first in line.
func (l *FairLock) Acquire(ctx context.Context, ttl time.Duration) (granted bool, remaining time.Duration, fence int64, err error) {
	granted, remaining, fence, _, err = l.AcquireChecked(ctx, ttl, Checks{})
	return
}

// AcquireChecked is Acquire with checks in the same round trip.
func (l *FairLock) AcquireChecked(ctx context.Context, ttl time.Duration, chk Checks) (granted bool, remaining time.Duration, fence int64, c Checked, err error) {
	defer l.once.Do(func() { close(l.answered) })
	b := l.l
	args := []any{b.owner, ms(ttl), b.attempt, b.fenceArg(), l.w.ID, l.w.Ticket, l.mode.arg(), ms(l.w.Timeout), l.wake, b.channel, b.n.retentionMS()}
	r, c, err := b.n.runChecked(ctx, fairAcquireScript, l.all, args, chk)
	if err != nil {
		return false, 0, 0, c, err
	}
	var v [3]int64
	if err := intsOf(r, v[:], "fair acquire"); err != nil {
		return false, 0, 0, c, err
	}
	l.entry.Store(int32(v[2]))
	granted, remaining, fence = acquireAnswer(v[:2])
	return granted, remaining, fence, c, nil
}

// Release gives back this attempt's share and wakes the next waiter when
// the lock became free. After Hold it also takes the waiter out of line;
// before (a failed attempt's rollback) the waiter keeps its place and is
// not woken by its own rollback.
func (l *FairLock) Release(ctx context.Context) (bool, error) {
	leave := "0"
	if l.held.Load() {
		leave = "1"
	}
	b := l.l
	v, err := b.n.evalInt(ctx, fairReleaseScript, l.all, b.owner, b.attempt, l.w.ID, leave, ms(l.w.Timeout), l.wake, b.channel)
	return v == 1, err
}

// WaiterID makes a waiter id whose wake-ups go to channel key: waiters
// that never wait at the same time may share a channel (one subscription
// serves them all), unique tells them apart. key must not contain '|'.
func WaiterID(key, unique string) string { return key + "|" + unique }

// WatchWaiter registers signal to be notified when a waiter whose id was
// made with WaiterID(key, ...) is first in line of fair lock name and the
// lock became free on this node: the fair scripts publish on the channel
// FairKeys.Wake + key, so exactly one waiter wakes per release, in whatever
// process it runs. It shares the node's pub/sub connection with Watch;
// ready is told once the subscription is confirmed. Every watch of the
// channel is told. Stop it (Stop(false)) when no waiter uses key any more.
func (n *Node) WatchWaiter(name, key string, signal, ready chan<- struct{}) *Watch {
	w := &Watch{s: n.subscriber(), channel: n.FairKeys(name).Wake + key, signal: signal, notify: ready, ready: make(chan struct{}), wakeAll: true}
	w.s.add(w)
	return w
}

// QueueEntry is one waiter in the line of a fair lock on one node.
type QueueEntry struct {
	Waiter string
	// Ticket is the waiter's ticket; 0 while it is taking one.
	Ticket int64
	// TTL is how long the entry lives unless refreshed.
	TTL time.Duration
}

// Queue reads the line of fair lock name on this node, first waiter first.
// Entries whose deadline has passed and waiters that left are not listed.
func (n *Node) Queue(ctx context.Context, name string) ([]QueueEntry, error) {
	f := n.FairKeys(name)
	var out []QueueEntry
	err := n.call(ctx, func(ctx context.Context) error {
		var q, d *redis.ZSliceCmd
		var tm *redis.Cmd
		if err := n.t.reloaded(ctx, func() error {
			pipe := n.client.TxPipeline()
			q = pipe.ZRangeByScoreWithScores(ctx, f.Queue, &redis.ZRangeBy{Min: "0", Max: "+inf"})
			d = pipe.ZRangeWithScores(ctx, f.Deadlines, 0, -1)
			// The server's clock, read by a script keyed to the line's slot
			// (see readLockLua: no bare TIME in a cluster transaction).
			tm = n.t.inTx(ctx, pipe, serverTimeLua, []string{f.Queue})
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			return nil
		}); err != nil {
			return err
		}
		ts, err := tm.StringSlice()
		if err != nil || len(ts) != 2 {
			return fmt.Errorf("quorumlock: the server's time: %v %v", ts, err)
		}
		now, err := serverTime(ts[0], ts[1])
		if err != nil {
			return err
		}
		deadline := map[string]float64{}
		for _, z := range d.Val() {
			deadline[z.Member.(string)] = z.Score
		}
		nowMs := float64(now.UnixMilli())
		for _, z := range q.Val() {
			id := z.Member.(string)
			left := deadline[id] - nowMs
			if left < 0 {
				continue
			}
			ticket := int64(z.Score)
			if float64(ticket) != z.Score {
				ticket = 0 // still taking its ticket
			}
			out = append(out, QueueEntry{Waiter: id, Ticket: ticket, TTL: time.Duration(left) * time.Millisecond})
		}
		return nil
	})
	if err != nil {
		return nil, err // out is not read: a wrapped call may still be running
	}
	return out, nil
}

// ticketCounter reads the ticket counter of fair lock name (0 when none).
func (n *Node) ticketCounter(ctx context.Context, name string) (int64, error) {
	var v int64
	err := n.call(ctx, func(ctx context.Context) error {
		s, err := n.client.Get(ctx, n.FairKeys(name).Ticket).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err = strconv.ParseInt(s, 10, 64)
		return err
	})
	if err != nil {
		return 0, err // v is not read: a wrapped call may still be running
	}
	return v, nil
}
