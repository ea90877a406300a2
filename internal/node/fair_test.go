package node

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
)

func fairLock(n *Node, name, waiter string, ticket int64, mode QueueMode, timeout time.Duration) *FairLock {
	return n.FairLock(name, "owner-"+waiter, "att-"+waiter+"-"+mode.arg(), Waiter{ID: waiter, Ticket: ticket, Timeout: timeout}, mode, true)
}

func mustAcquire(t *testing.T, l *FairLock, want bool, wantEntry Entry) time.Duration {
	t.Helper()
	ok, rem, _, err := l.Acquire(t.Context(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ok != want {
		t.Fatalf("%s (%v) granted=%v, want %v", l.w.ID, l.mode.arg(), ok, want)
	}
	if got := l.Entry(); got != wantEntry {
		t.Fatalf("%s (%v): entry %v, want %v", l.w.ID, l.mode.arg(), got, wantEntry)
	}
	return rem
}

func watchReady(t *testing.T, n *Node, name, waiter string) (*Watch, chan struct{}) {
	t.Helper()
	sig := make(chan struct{}, 1)
	w := n.WatchWaiter(name, waiter, sig, nil)
	t.Cleanup(func() { w.Stop(false) })
	select {
	case <-w.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not confirmed")
	}
	return w, sig
}

func woken(sig chan struct{}, within time.Duration) bool {
	select {
	case <-sig:
		return true
	case <-time.After(within):
		return false
	}
}

func waiters(t *testing.T, n *Node, name string) []string {
	t.Helper()
	q, err := n.Queue(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range q {
		ids = append(ids, e.Waiter)
	}
	return ids
}

// The line on one node: a waiter taking its ticket holds every grant back;
// the first in line is granted; its release wakes exactly the next waiter;
// TryLock never passes anyone in line.
func TestFairLineOnOneNode(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	const name, timeout = "fl", 5 * time.Second
	ta, err := n.TakeTicket(ctx, name, "a", timeout)
	if err != nil || ta != 1 {
		t.Fatalf("ticket a = %d, %v", ta, err)
	}
	tb, _ := n.TakeTicket(ctx, name, "b", timeout)
	tc, _ := n.TakeTicket(ctx, name, "c", timeout)
	if tb != 2 || tc != 3 {
		t.Fatalf("tickets %d %d, want 2 3", tb, tc)
	}
	_, sigA := watchReady(t, n, name, "a")
	_, sigB := watchReady(t, n, name, "b")
	_, sigC := watchReady(t, n, name, "c")

	// b places its ticket, but a is still taking one: nobody is granted.
	mustAcquire(t, fairLock(n, name, "b", tb, Enqueue, timeout), false, EntryKept)
	mustAcquire(t, fairLock(n, name, "x", 0, NoQueue, timeout), false, EntryUnknown)
	// c places its ticket; a is still taking one.
	mustAcquire(t, fairLock(n, name, "c", tc, Enqueue, timeout), false, EntryKept)
	// a places the lowest ticket and is first: granted.
	la := fairLock(n, name, "a", ta, Enqueue, timeout)
	mustAcquire(t, la, true, EntryKept)
	// A retried call of the same attempt is granted again.
	mustAcquire(t, la, true, EntryKept)
	if got := waiters(t, n, name); len(got) != 3 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("line %v, want [a b c]", got)
	}
	if woken(sigB, 50*time.Millisecond) || woken(sigC, 0) {
		t.Fatal("a waiter was woken while the lock was held")
	}
	// a's lease ends: a leaves the line and exactly b (first now) is woken.
	la.Hold()
	if ok, err := la.Release(ctx); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if !woken(sigB, 5*time.Second) {
		t.Fatal("b, first in line, was not woken")
	}
	if woken(sigC, 100*time.Millisecond) || woken(sigA, 0) {
		t.Fatal("a waiter other than the first was woken")
	}
	// TryLock does not pass b, and c is not first.
	mustAcquire(t, fairLock(n, name, "y", 0, NoQueue, timeout), false, EntryUnknown)
	rem := mustAcquire(t, fairLock(n, name, "c", tc, Refresh, timeout), false, EntryKept)
	if rem <= 0 || rem > timeout {
		t.Fatalf("wait hint %v, want b's entry lifetime (0, %v]", rem, timeout)
	}
	// A waiter that starts taking a ticket now draws 4: it holds back
	// tickets from 4 on, not b (2) or c (3).
	if v, _ := n.TakeTicket(ctx, name, "late", timeout); v != 4 {
		t.Fatalf("late waiter drew %d, want 4", v)
	}
	lb := fairLock(n, name, "b", tb, Refresh, timeout)
	mustAcquire(t, lb, true, EntryKept)
	lb.Hold()
	_, _ = lb.Release(ctx)
	if !woken(sigC, 5*time.Second) {
		t.Fatal("c was not woken")
	}
	lc := fairLock(n, name, "c", tc, Refresh, timeout)
	mustAcquire(t, lc, true, EntryKept)
	lc.Hold()
	_, _ = lc.Release(ctx)
	if q, _ := n.Queue(ctx, name); len(q) != 1 || q[0].Waiter != "late" || q[0].Ticket != 0 {
		t.Fatalf("line %+v, want only the late waiter, still taking its ticket", q)
	}
	// Taking a ticket holds TryLock back too.
	mustAcquire(t, fairLock(n, name, "w", 0, NoQueue, timeout), false, EntryUnknown)
	if err := n.Leave(ctx, name, "late", timeout); err != nil {
		t.Fatal(err)
	}
	if got := waiters(t, n, name); len(got) != 0 {
		t.Fatalf("line %v after everyone left, want empty", got)
	}
	// Nobody in line: TryLock is granted, and the counter kept counting.
	lt := fairLock(n, name, "z", 0, NoQueue, timeout)
	mustAcquire(t, lt, true, EntryUnknown)
	_, _ = lt.Release(ctx)
	if v, _ := n.ticketCounter(ctx, name); v != 4 {
		t.Fatalf("ticket counter %d, want 4", v)
	}
}

// A failed attempt's rollback keeps the waiter's place; only a held lease's
// release takes it out of line.
func TestFairRollbackKeepsPlace(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	const name, timeout = "rb", 5 * time.Second
	ta, _ := n.TakeTicket(ctx, name, "a", timeout)
	tb, _ := n.TakeTicket(ctx, name, "b", timeout)
	mustAcquire(t, fairLock(n, name, "b", tb, Enqueue, timeout), false, EntryKept)
	_, sigA := watchReady(t, n, name, "a")
	la := fairLock(n, name, "a", ta, Enqueue, timeout)
	mustAcquire(t, la, true, EntryKept)
	if ok, _ := la.Release(ctx); !ok {
		t.Fatal("rollback found no share")
	}
	if got := waiters(t, n, name); len(got) != 2 || got[0] != "a" {
		t.Fatalf("line %v after a rollback, want a still first", got)
	}
	// The rollback freed the lock, but a is not woken by its own rollback
	// (it would spin while another waiter holds a majority elsewhere).
	if woken(sigA, 100*time.Millisecond) {
		t.Fatal("a waiter was woken by its own rollback")
	}
	mustAcquire(t, fairLock(n, name, "a", ta, Refresh, timeout), true, EntryKept)
}

// A waiter that stops refreshing leaves the line at its deadline, and the
// next one is first; one that left cannot be put back by a late message.
func TestFairEntryTimeoutAndLeave(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	const name = "to"
	short, long := 150*time.Millisecond, 5*time.Second
	ta, _ := n.TakeTicket(ctx, name, "dead", short)
	ld := fairLock(n, name, "dead", ta, Enqueue, short)
	mustAcquire(t, ld, true, EntryKept)
	tb, _ := n.TakeTicket(ctx, name, "b", long)
	// Its attempt is given back without Hold (a failed attempt): "dead"
	// keeps its place, but never comes back to refresh it.
	_, _ = ld.Release(ctx)
	mustAcquire(t, fairLock(n, name, "b", tb, Enqueue, long), false, EntryKept)
	time.Sleep(short + 50*time.Millisecond) // time passing is the test: the dead waiter's deadline passes
	// The dead waiter's deadline passed: b's next call drops it and is first.
	mustAcquire(t, fairLock(n, name, "b", tb, Refresh, long), true, EntryKept)
	mustAcquire(t, fairLock(n, name, "dead", ta, Refresh, short), false, EntryGone)

	// Leave leaves a tombstone: a late ticket or enqueue of the same waiter
	// does not put it back.
	const name2 = "lv"
	tc, _ := n.TakeTicket(ctx, name2, "c", long)
	if err := n.Leave(ctx, name2, "c", long); err != nil {
		t.Fatal(err)
	}
	if _, err := n.TakeTicket(ctx, name2, "c", long); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, fairLock(n, name2, "c", tc, Enqueue, long), false, EntryGone)
	if got := waiters(t, n, name2); len(got) != 0 {
		t.Fatalf("line %v after leave, want empty", got)
	}
	// Nobody (live) in line: TryLock is granted.
	mustAcquire(t, fairLock(n, name2, "t", 0, NoQueue, long), true, EntryUnknown)
}

// A fair grant waits for a plain holder of the same name; a fair release
// with nobody in line wakes plain waiters on the unlock channel.
func TestFairAndPlainShareTheLock(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	const name, timeout = "mix", 5 * time.Second
	p := n.Lock(name, "plain", "p1", false)
	if ok, _, _, _ := p.Acquire(ctx, 5*time.Second); !ok {
		t.Fatal("plain acquire")
	}
	ta, _ := n.TakeTicket(ctx, name, "a", timeout)
	rem := mustAcquire(t, fairLock(n, name, "a", ta, Enqueue, timeout), false, EntryKept)
	if rem <= time.Second {
		t.Fatalf("wait hint %v, want the plain holder's TTL", rem)
	}
	_, _ = p.Release(ctx)
	la := fairLock(n, name, "a", ta, Refresh, timeout)
	mustAcquire(t, la, true, EntryKept)
	sig := make(chan struct{}, 1)
	w := n.watch(name, sig, nil, false)
	defer w.Stop(false)
	<-w.Ready()
	la.Hold()
	_, _ = la.Release(ctx)
	if !woken(sig, 5*time.Second) {
		t.Fatal("plain waiter not woken by a fair release with nobody in line")
	}
	ctx2, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if ok, _, _, err := n.Lock(name, "plain", "p2", false).Acquire(ctx2, time.Second); !ok || err != nil {
		t.Fatalf("plain acquire after the fair release: %v %v", ok, err)
	}
}

func TestFairKeysShareOneClusterSlot(t *testing.T) {
	_, n := start(t)
	k, f := n.Keys("orders/7"), n.FairKeys("orders/7")
	for _, key := range []string{f.Queue, f.Deadlines, f.Ticket, f.Wake + "w"} {
		if hashTag(key) != hashTag(k.Lock) {
			t.Fatalf("%q does not share the lock's hash tag", key)
		}
	}
}

// The ticket counter expires like the fencing counter: taking a ticket and
// writing one back re-arm the retention, and a line that lives longer than
// the counter's TTL keeps it alive (a waiter still in line holds back every
// later ticket only while the counter outlives it).
func TestFairTicketCounterExpires(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	n, c := nodeOn(t, s, WithFenceRetention(2*time.Hour))
	ctx := t.Context()
	name := "ticket-ttl"
	key := n.FairKeys(name).Ticket
	pttl := func(when string) time.Duration {
		t.Helper()
		d, err := c.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if d <= 0 {
			t.Fatalf("%s: ticket counter PTTL %v, want an expiry", when, d)
		}
		return d
	}
	tk, err := n.TakeTicket(ctx, name, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if d := pttl("after a ticket"); d <= time.Hour || d > 2*time.Hour {
		t.Fatalf("after a ticket: PTTL %v, want the retention (2h)", d)
	}
	// A counter left without an expiry (an earlier version's) is given one
	// by the write-back of a ticket.
	c.Persist(ctx, key)
	mustAcquire(t, fairLock(n, name, "a", tk, Enqueue, time.Minute), true, EntryKept)
	if d := pttl("after the write-back"); d <= time.Hour {
		t.Fatalf("after the write-back: PTTL %v, want the retention", d)
	}
	// A line that outlives the counter's TTL extends it: the queue keys'
	// refresh makes it live as long as they do.
	c.PExpire(ctx, key, time.Second)
	c.PExpire(ctx, n.FairKeys(name).Queue, time.Second)
	mustAcquire(t, fairLock(n, name, "a", tk, Refresh, time.Minute), true, EntryKept)
	if d := pttl("after a refresh"); d <= time.Minute {
		t.Fatalf("after a refresh: PTTL %v, want at least the line's (2 min)", d)
	}
}
