package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
)

// The election's value scripts, with EVALSHA and with FCALL: a prepared
// value is invisible to the leader read until its commit; a withdrawn one
// is gone; a commit never lowers the rev (a late or repeated one, or a
// reader's write-back of an older rev, changes nothing); only the lock's
// owner writes; a new term never shows the last term's value.
func TestElectValueScripts(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	for _, funcs := range []bool{false, true} {
		t.Run(fmt.Sprintf("functions=%v", funcs), func(t *testing.T) {
			n, c := nodeOn(t, s, WithFunctions(funcs))
			testElectValueScripts(t, n, fmt.Sprint("ev", funcs), func(fields ...any) {
				t.Helper()
				if err := c.HSet(t.Context(), n.Keys(fmt.Sprint("ev", funcs)).LeaderKey(), fields...).Err(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// leftover writes fields into the election's value hash, as a hash left
// behind by an earlier term.
func testElectValueScripts(t *testing.T, n *Node, name string, leftover func(fields ...any)) {
	ctx := t.Context()
	read := func(when string) Leader {
		t.Helper()
		st, err := n.Leader(ctx, name)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		return st
	}
	want := func(when string, held bool, term, rev int64, value, owner string) {
		t.Helper()
		st := read(when)
		if st.Held != held || st.Term != term || st.Rev != rev || st.Value != value || st.Owner != owner {
			t.Fatalf("%s: read %+v, want held %v term %d rev %d value %q owner %q", when, st, held, term, rev, value, owner)
		}
		if held && st.TTL <= 0 {
			t.Fatalf("%s: TTL %v", when, st.TTL)
		}
	}
	step := func(when string, ok bool, err error, wantOK bool) {
		t.Helper()
		if err != nil || ok != wantOK {
			t.Fatalf("%s: %v, %v; want %v", when, ok, err, wantOK)
		}
	}
	acquire := func(owner string) *Lock {
		t.Helper()
		l := n.Lock(name, owner, owner+".1", false).Elect()
		if ok, _, _, err := l.Acquire(ctx, 5*time.Second); !ok || err != nil {
			t.Fatalf("acquire for %s: %v %v", owner, ok, err)
		}
		return l
	}

	// Nobody holds the lock: nothing can be written.
	ok, err := n.Prepare(ctx, name, "alice", 7, 1, "a1")
	step("prepare without the lock", ok, err, false)
	ok, err = n.Proclaim(ctx, name, "alice", 7, 1, "a1")
	step("commit without the lock", ok, err, false)
	want("nothing held", false, 0, 0, "", "")

	l := acquire("alice")
	ok, err = n.Prepare(ctx, name, "alice", 7, 1, "a1")
	step("prepare", ok, err, true)
	// Held, but nothing committed: rev 0, the pending value unseen.
	want("prepared", true, 7, 0, "", "alice")
	ok, err = n.Prepare(ctx, name, "bob", 7, 1, "b1")
	step("another owner's prepare", ok, err, false)
	ok, err = n.Proclaim(ctx, name, "bob", 7, 1, "b1")
	step("another owner's commit", ok, err, false)
	ok, err = n.Proclaim(ctx, name, "alice", 7, 1, "a1")
	step("commit", ok, err, true)
	want("committed", true, 7, 1, "a1", "alice")

	// A prepared rev 2 stays unseen, and a withdrawn one is gone: a
	// withdrawal of another rev, owner or term touches nothing.
	ok, err = n.Prepare(ctx, name, "alice", 7, 2, "a2")
	step("prepare rev 2", ok, err, true)
	want("rev 2 pending", true, 7, 1, "a1", "alice")
	for _, w := range []struct {
		owner     string
		term, rev int64
	}{{"alice", 7, 3}, {"bob", 7, 2}, {"alice", 8, 2}} {
		ok, err = n.Withdraw(ctx, name, w.owner, w.term, w.rev)
		step(fmt.Sprintf("withdraw %+v", w), ok, err, false)
	}
	ok, err = n.Withdraw(ctx, name, "alice", 7, 2)
	step("withdraw rev 2", ok, err, true)
	ok, err = n.Withdraw(ctx, name, "alice", 7, 2)
	step("withdraw rev 2 again", ok, err, false)
	want("rev 2 withdrawn", true, 7, 1, "a1", "alice")

	// Commit never lowers: rev 3, then a late rev 2 and a repeated rev 3
	// with another value leave rev 3.
	ok, err = n.Proclaim(ctx, name, "alice", 7, 3, "a3")
	step("commit rev 3", ok, err, true)
	for _, rev := range []int64{2, 3, 1} {
		ok, err = n.Proclaim(ctx, name, "alice", 7, rev, "late")
		step(fmt.Sprintf("late commit of rev %d", rev), ok, err, true)
	}
	want("after late commits", true, 7, 3, "a3", "alice")
	// A commit of rev 4 over a pending rev 5 keeps rev 5 pending: its own
	// commit still lands.
	ok, err = n.Prepare(ctx, name, "alice", 7, 5, "a5")
	step("prepare rev 5", ok, err, true)
	ok, err = n.Proclaim(ctx, name, "alice", 7, 4, "a4")
	step("write-back of rev 4", ok, err, true)
	want("rev 4 committed, 5 pending", true, 7, 4, "a4", "alice")
	ok, err = n.Proclaim(ctx, name, "alice", 7, 5, "a5")
	step("commit rev 5", ok, err, true)
	want("rev 5", true, 7, 5, "a5", "alice")

	// The next term, by another owner: a hash left behind by alice (as
	// when her lock expired a moment before it) is not read as bob's, and
	// bob's first prepare drops it; so does one left by an older term of
	// the same owner, whose higher rev would otherwise keep bob's commit
	// out.
	if ok, err := l.Release(ctx); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	want("released", false, 0, 0, "", "")
	l = acquire("bob")
	want("bob elected, nothing written", false, 0, 0, "", "")
	leftover("owner", "alice", "term", 7, "rev", 5, "value", "a5")
	want("alice's leftover", false, 0, 0, "", "")
	leftover("owner", "bob", "term", 3, "rev", 9, "value", "old")
	want("bob's old term's leftover", true, 3, 9, "old", "bob")
	ok, err = n.Prepare(ctx, name, "bob", 8, 1, "b1")
	step("bob's prepare", ok, err, true)
	want("bob's first value pending", true, 8, 0, "", "bob")
	ok, err = n.Proclaim(ctx, name, "alice", 7, 6, "a6")
	step("the old leader's commit", ok, err, false)
	ok, err = n.Proclaim(ctx, name, "bob", 8, 1, "b1")
	step("bob's commit", ok, err, true)
	want("bob's value", true, 8, 1, "b1", "bob")
	if ok, err := l.Release(ctx); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	want("released", false, 0, 0, "", "")
}
