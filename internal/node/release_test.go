package node

import (
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
)

// The release script's one-read path (the attempt's share is the only one)
// and its general path leave the same state and publish the same way; a
// rollback frees the lock the same way and publishes nothing. Each through
// the batcher (a Mutex's release) and through a plain script call.
func TestReleasePaths(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	for _, batching := range []bool{true, false} {
		n, _ := nodeOn(t, s, WithBatching(batching))
		if (batchOf(n) != nil) != batching {
			t.Fatalf("batching %v: node batches %v", batching, batchOf(n) != nil)
		}
		testReleasePaths(t, s, n)
	}
}

func testReleasePaths(t *testing.T, s *localredis.Server, n *Node) {
	ctx := t.Context()
	sub := s.Client()
	t.Cleanup(func() { _ = sub.Close() })
	ps := sub.Subscribe(ctx, n.Keys("rp").Channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil { // subscription confirmed
		t.Fatal(err)
	}
	published := func() bool {
		select {
		case <-ps.Channel():
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}
	acquire := func(owner, attempt string) *Lock {
		l := n.Lock("rp", owner, attempt, false)
		if ok, _, _, err := l.Acquire(ctx, 5*time.Second); !ok || err != nil {
			t.Fatalf("acquire %s/%s: %v %v", owner, attempt, ok, err)
		}
		return l
	}
	release := func(l *Lock, want bool) {
		t.Helper()
		if ok, err := l.Release(ctx); ok != want || err != nil {
			t.Fatalf("release %s: %v %v, want %v", l.attempt, ok, err, want)
		}
	}
	state := func() State {
		st, err := n.Inspect(ctx, "rp")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	// Sole share: free, and published.
	a := acquire("alice", "a1")
	release(a, true)
	if st := state(); st.Present || !published() {
		t.Fatalf("sole share: present %v", st.Present)
	}
	release(a, false) // given back already

	// Two shares of one owner: the first release keeps it, the second frees it.
	a1, a2 := acquire("alice", "a1"), acquire("alice", "a2")
	release(a1, true)
	if st := state(); !st.Present || st.Holders["alice"] != 1 || st.Attempts != 1 || published() {
		t.Fatalf("after one of two shares: %+v", st)
	}
	release(a1, false)
	release(n.Lock("rp", "bob", "b1", false), false) // never held
	if st := state(); !st.Present || st.Holders["alice"] != 1 {
		t.Fatalf("a release without a share changed the lock: %+v", st)
	}
	release(a2, true)
	if st := state(); st.Present || !published() {
		t.Fatalf("last share: present %v", st.Present)
	}

	// Rollbacks (an attempt that lost the quorum): the lock is freed as by
	// a release, the string form and the hash form alike, and nobody is
	// told.
	rollback := func(l *Lock) {
		t.Helper()
		if ok, err := l.Rollback(ctx); !ok || err != nil {
			t.Fatalf("rollback %s: %v %v", l.attempt, ok, err)
		}
	}
	rollback(acquire("alice", "a3"))
	if st := state(); st.Present || published() {
		t.Fatalf("rollback of the sole share: present %v, or it published", st.Present)
	}
	a4, a5 := acquire("alice", "a4"), acquire("alice", "a5")
	release(a4, true)
	rollback(a5)
	if st := state(); st.Present || published() {
		t.Fatalf("rollback of the last share: present %v, or it published", st.Present)
	}
}

// An election's release removes the leader's value and tells both
// channels (the lock is free, the leader resigned); its rollback removes
// them the same way and tells nobody.
func TestElectReleaseTells(t *testing.T) {
	s, n := start(t)
	ctx := t.Context()
	k := n.Keys("el")
	sub := s.Client()
	t.Cleanup(func() { _ = sub.Close() })
	ps := sub.Subscribe(ctx, k.Channel, k.LeaderChannel())
	t.Cleanup(func() { _ = ps.Close() })
	for range 2 { // both subscriptions confirmed
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	heard := func() []string {
		var got []string
		for {
			select {
			case m := <-ps.Channel():
				got = append(got, m.Channel+" "+m.Payload)
			case <-time.After(100 * time.Millisecond):
				return got
			}
		}
	}
	for i, rollback := range []bool{false, true} {
		l := n.Lock("el", "alice", "alice."+string(rune('1'+i)), false).Elect()
		if ok, _, _, err := l.Acquire(ctx, 5*time.Second); !ok || err != nil {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		if ok, err := n.Proclaim(ctx, "el", "alice", 1, 1, "v"); !ok || err != nil {
			t.Fatalf("proclaim: %v %v", ok, err)
		}
		heard() // the proclaim's message
		var ok bool
		var err error
		if rollback {
			ok, err = l.Rollback(ctx)
		} else {
			ok, err = l.Release(ctx)
		}
		if !ok || err != nil {
			t.Fatalf("rollback %v: %v %v", rollback, ok, err)
		}
		if left, err := sub.Exists(ctx, k.Lock, k.LeaderKey()).Result(); left != 0 || err != nil {
			t.Fatalf("rollback %v: %d of the lock and the leader's value left (%v)", rollback, left, err)
		}
		want := []string{k.Channel + " released", k.LeaderChannel() + " resigned"}
		if rollback {
			want = nil
		}
		if got := heard(); !slices.Equal(got, want) {
			t.Fatalf("rollback %v: heard %q, want %q", rollback, got, want)
		}
	}
}
