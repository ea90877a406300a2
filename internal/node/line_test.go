package node

import (
	"testing"
	"time"
)

// A refused waiter with a place queues in the lock's line; a release wakes
// the head of the line alone (the earliest score, whatever the order of
// arrival), on its client's standing wait channel and its own watch among
// that client's waiters, or, when it does not watch yet, its watch once
// made; a head whose client does not listen is dropped and the lock's
// channel told instead; the line always has a TTL.
func TestReleaseWakesHeadOfLine(t *testing.T) {
	s, n := start(t)
	ctx := t.Context()
	c1, _ := nodeOn(t, s) // two waiting clients, each with its subscriber
	c2, _ := nodeOn(t, s)
	k := n.Keys("line")
	ch1, ch2 := c1.WaitChannel("c1"), c2.WaitChannel("c2")
	for _, c := range []struct {
		n  *Node
		ch string
	}{{c1, ch1}, {c2, ch2}} {
		select {
		case <-c.n.Stand(c.ch, nil).Ready():
		case <-time.After(5 * time.Second):
			t.Fatal("wait channel not confirmed")
		}
	}
	hold := func(attempt string) *Lock {
		t.Helper()
		l := n.Lock("line", "holder", attempt, false)
		if ok, _, _, err := l.Acquire(ctx, 5*time.Second); !ok || err != nil {
			t.Fatalf("holder acquire: %v %v", ok, err)
		}
		return l
	}
	refuse := func(c *Node, owner string, p *LinePlace) {
		t.Helper()
		l := c.Lock("line", owner, owner+".1", false).Queue(p)
		if ok, _, _, err := l.Acquire(ctx, 5*time.Second); ok || err != nil {
			t.Fatalf("%s: granted %v, err %v: want refused", owner, ok, err)
		}
		if !p.Queued() {
			t.Fatalf("%s: refused but not marked queued", owner)
		}
	}
	watch := func(c *Node, ch string, seq uint64) chan struct{} {
		t.Helper()
		sig := make(chan struct{}, 1)
		w := c.WatchChannel(seq, ch, sig, nil, false)
		select {
		case <-w.Ready():
		default:
			t.Fatal("a watch on a standing channel not ready at once")
		}
		t.Cleanup(func() { w.Stop(false) })
		return sig
	}
	woken := func(sig chan struct{}) bool {
		select {
		case <-sig:
			return true
		case <-time.After(200 * time.Millisecond):
			return false
		}
	}
	release := func(l *Lock) {
		t.Helper()
		if ok, err := l.Release(ctx); !ok || err != nil {
			t.Fatalf("release: %v %v", ok, err)
		}
	}

	h := hold("h.1")
	sig7 := watch(c1, ch1, 7)
	sig8 := watch(c1, ch1, 8)
	sig9 := watch(c2, ch2, 9)
	refuse(c1, "a", NewLinePlace(ch1, 8, 200)) // first to arrive, later in line
	refuse(c2, "b", NewLinePlace(ch2, 9, 100))
	if pt := s.Client().PTTL(ctx, k.Lock+":waiters").Val(); pt <= 0 {
		t.Fatalf("line PTTL %v: want a TTL", pt)
	}
	release(h)
	if !woken(sig9) {
		t.Fatal("head of the line (c2's waiter 9) not woken")
	}
	if woken(sig7) || woken(sig8) {
		t.Fatal("a waiter behind the head woken too")
	}
	// Next release: c1's waiter 8, not c1's first watch (7).
	release(hold("h.2"))
	if !woken(sig8) || woken(sig7) {
		t.Fatal("release did not wake the waiter named in the line")
	}
	// A release between a waiter's refusal and its watch: the message
	// naming it is kept, and wakes its watch once made; nobody else.
	h = hold("h.4")
	refuse(c1, "a", NewLinePlace(ch1, 99, 300))
	release(h)
	if woken(sig7) {
		t.Fatal("a message naming a waiter not watching yet woke another")
	}
	if sig99 := watch(c1, ch1, 99); !woken(sig99) {
		t.Fatal("a waiter named before it watched was not woken by its watch")
	}
	// The wait channel stays subscribed with no waiter watching.
	if m := s.Client().PubSubNumSub(ctx, ch1).Val(); m[ch1] != 1 {
		t.Fatalf("wait channel subscribers %v: want the standing one", m[ch1])
	}
	// A head nobody listens to (its client is gone) is dropped; the
	// lock's channel is told.
	h = hold("h.3")
	refuse(c2, "b", NewLinePlace(c2.WaitChannel("gone"), 10, 50))
	bsig := make(chan struct{}, 1)
	bw := c1.WatchAs(11, "line", bsig, nil, false)
	<-bw.Ready()
	defer bw.Stop(false)
	release(h)
	if !woken(bsig) {
		t.Fatal("lock's channel not told when the head's client does not listen")
	}
	if n := s.Client().Exists(ctx, k.Lock+":waiters").Val(); n != 0 {
		t.Fatal("the unheard head stayed in the line")
	}
}

// A waiter that gave up leaves the line (LeaveLine): the next release
// wakes the waiter behind it.
func TestLeaveLine(t *testing.T) {
	s, n := start(t)
	ctx := t.Context()
	c1, _ := nodeOn(t, s)
	ch := c1.WaitChannel("c1")
	<-c1.Stand(ch, nil).Ready()
	k := n.Keys("leave")
	h := n.Lock("leave", "holder", "holder.1", false)
	if ok, _, _, err := h.Acquire(ctx, 5*time.Second); !ok || err != nil {
		t.Fatalf("holder: %v %v", ok, err)
	}
	gone, next := NewLinePlace(ch, 1, 10), NewLinePlace(ch, 2, 20)
	for i, p := range []*LinePlace{gone, next} {
		if ok, _, _, _ := c1.Lock("leave", "w", "w."+string(rune('a'+i)), false).Queue(p).Acquire(ctx, 5*time.Second); ok {
			t.Fatal("granted while held")
		}
	}
	if err := c1.LeaveLine(ctx, k, gone); err != nil {
		t.Fatal(err)
	}
	sig := make(chan struct{}, 1)
	w := c1.WatchChannel(2, ch, sig, nil, false)
	defer w.Stop(false)
	if ok, err := h.Release(ctx); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	select {
	case <-sig:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter behind one that left was not woken")
	}
}

// A waiter that took the lock without being woken (a retry) is still in
// the line; its release takes it out before waking the head, so the
// wake-up goes to a waiter, not to a client that holds the lock.
func TestReleaseTakesWinnerOutOfLine(t *testing.T) {
	s, n := start(t)
	ctx := t.Context()
	c1, _ := nodeOn(t, s)
	c2, _ := nodeOn(t, s)
	k := n.Keys("won")
	h := n.Lock("won", "holder", "holder.1", false)
	if ok, _, _, err := h.Acquire(ctx, 5*time.Second); !ok || err != nil {
		t.Fatalf("holder: %v %v", ok, err)
	}
	ch1, ch2 := c1.WaitChannel("c1"), c2.WaitChannel("c2")
	p2 := NewLinePlace(ch2, 6, 50)
	if ok, _, _, _ := c2.Lock("won", "b", "b.1", false).Queue(p2).Acquire(ctx, 5*time.Second); ok {
		t.Fatal("c2 granted while held")
	}
	// The holder's lock expires unreleased (no wake-up); c2 takes it on a
	// retry, and c1 queues behind c2's stale entry.
	s.Client().Del(ctx, k.Lock)
	won := c2.Lock("won", "b", "b.2", false).Queue(p2)
	if ok, _, _, err := won.Acquire(ctx, 5*time.Second); !ok || err != nil {
		t.Fatalf("c2 retry: %v %v", ok, err)
	}
	if ok, _, _, _ := c1.Lock("won", "a", "a.1", false).Queue(NewLinePlace(ch1, 5, 100)).Acquire(ctx, 5*time.Second); ok {
		t.Fatal("c1 granted while c2 holds")
	}
	sig1, sig2 := make(chan struct{}, 1), make(chan struct{}, 1)
	for _, w := range []*Watch{c1.WatchChannel(5, ch1, sig1, nil, false), c2.WatchChannel(9, ch2, sig2, nil, false)} {
		<-w.Ready()
		defer w.Stop(false)
	}
	if ok, err := won.Release(ctx); !ok || err != nil {
		t.Fatalf("c2 release: %v %v", ok, err)
	}
	select {
	case <-sig1:
	case <-sig2:
		t.Fatal("c2's release woke c2 (its own stale entry), not the waiter c1")
	case <-time.After(5 * time.Second):
		t.Fatal("nobody woken")
	}
}

// A waiter refused by a holder of its own client (attempt ids starting
// with the same "<client>:") does not queue while no line exists: the
// client wakes its own waiters on the lock's channel, and the node keeps
// nothing. Behind a waiter of another client it queues; so does one
// refused by another client's holder, in the hash form too.
func TestOwnClientWaiterQueuesOnlyBehindOthers(t *testing.T) {
	s, n := start(t)
	ctx := t.Context()
	k := n.Keys("own")
	line := k.Lock + ":waiters"
	ch := n.WaitChannel("c1")
	h := n.Lock("own", "c1:1", "c1:1.1", false)
	if ok, _, _, err := h.Acquire(ctx, 5*time.Second); !ok || err != nil {
		t.Fatalf("holder: %v %v", ok, err)
	}
	refused := func(owner string, p *LinePlace) {
		t.Helper()
		if ok, _, _, err := n.Lock("own", owner, owner+".1", false).Queue(p).Acquire(ctx, 5*time.Second); ok || err != nil {
			t.Fatalf("%s: granted %v, err %v: want refused", owner, ok, err)
		}
	}
	mine := NewLinePlace(ch, 1, 10)
	refused("c1:2", mine)
	if mine.Queued() || s.Client().Exists(ctx, line).Val() != 0 {
		t.Fatal("a waiter refused by its own client's holder queued with no line")
	}
	other := NewLinePlace(n.WaitChannel("c2"), 2, 20)
	refused("c2:1", other)
	if !other.Queued() {
		t.Fatal("a waiter refused by another client's holder did not queue")
	}
	behind := NewLinePlace(ch, 3, 30)
	refused("c1:3", behind)
	if !behind.Queued() {
		t.Fatal("a waiter of the holder's client did not queue behind another client's")
	}
	if got := s.Client().ZCard(ctx, line).Val(); got != 2 {
		t.Fatalf("line has %d waiters, want 2", got)
	}
	// The hash form (a reentrant hold): its holder is read from its fields.
	s.Client().Del(ctx, line)
	if ok, _, _, err := n.Lock("own", "c1:1", "c1:1.2", false).Acquire(ctx, 5*time.Second); !ok || err != nil {
		t.Fatalf("reentrant acquire: %v %v", ok, err)
	}
	if s.Client().Type(ctx, k.Lock).Val() != "hash" {
		t.Fatal("a reentrant hold is not the hash form")
	}
	hashMine := NewLinePlace(ch, 4, 40)
	refused("c1:4", hashMine)
	if hashMine.Queued() {
		t.Fatal("a waiter refused by its own client's hash-form holder queued with no line")
	}
	hashOther := NewLinePlace(n.WaitChannel("c2"), 5, 50)
	refused("c2:2", hashOther)
	if !hashOther.Queued() {
		t.Fatal("a waiter refused by another client's hash-form holder did not queue")
	}
}
