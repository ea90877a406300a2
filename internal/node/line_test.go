package node

import (
	"testing"
	"time"
)

// A refused waiter with a place queues in the lock's line; a release wakes
// the head of the line alone (the earliest score, whatever the order of
// arrival), on its client's channel and its own watch among that client's
// waiters; a head whose client stopped listening is dropped and the lock's
// channel told instead; the line always has a TTL.
func TestReleaseWakesHeadOfLine(t *testing.T) {
	s, n := start(t)
	ctx := t.Context()
	c1, _ := nodeOn(t, s) // two waiting clients, each with its subscriber
	c2, _ := nodeOn(t, s)
	k := n.Keys("line")
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
	}
	watch := func(c *Node, client string, seq uint64) (chan struct{}, *Watch) {
		t.Helper()
		sig := make(chan struct{}, 1)
		w := c.WatchChannel(seq, WaitChannel(k, client), sig, nil, false)
		select {
		case <-w.Ready():
		case <-time.After(5 * time.Second):
			t.Fatal("subscription not confirmed")
		}
		t.Cleanup(func() { w.Stop(false) })
		return sig, w
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
	sig7, _ := watch(c1, "c1", 7)
	sig8, _ := watch(c1, "c1", 8)
	sig9, w9 := watch(c2, "c2", 9)
	refuse(c1, "a", NewLinePlace("c1", 8, 200)) // first to arrive, later in line
	refuse(c2, "b", NewLinePlace("c2", 9, 100))
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
	// A waiter number the client no longer has wakes its first waiter:
	// the client still waits, so the wake-up is not dropped.
	h = hold("h.4")
	refuse(c1, "a", NewLinePlace("c1", 99, 300))
	release(h)
	if !woken(sig7) {
		t.Fatal("a message naming a gone waiter did not wake the client's first waiter")
	}
	// A head nobody listens to is dropped; the lock's channel is told.
	h = hold("h.3")
	refuse(c2, "b", NewLinePlace("c2", 10, 50))
	w9.Stop(false)
	for deadline := time.Now().Add(5 * time.Second); ; {
		if m := s.Client().PubSubNumSub(ctx, WaitChannel(k, "c2")).Val(); m[WaitChannel(k, "c2")] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("c2 still subscribed after its last watch stopped")
		}
		time.Sleep(5 * time.Millisecond)
	}
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
	p2 := NewLinePlace("c2", 6, 50)
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
	if ok, _, _, _ := c1.Lock("won", "a", "a.1", false).Queue(NewLinePlace("c1", 5, 100)).Acquire(ctx, 5*time.Second); ok {
		t.Fatal("c1 granted while c2 holds")
	}
	sig1, sig2 := make(chan struct{}, 1), make(chan struct{}, 1)
	for _, w := range []*Watch{c1.WatchChannel(5, WaitChannel(k, "c1"), sig1, nil, false), c2.WatchChannel(9, WaitChannel(k, "c2"), sig2, nil, false)} {
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
