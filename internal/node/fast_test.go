package node

import (
	"testing"
	"time"
)

// lockType is the Redis type of lock name's key ("string", "hash", "none").
func lockType(t *testing.T, n *Node, name string) string {
	t.Helper()
	typ, err := n.client.Type(t.Context(), n.Keys(name).Lock).Result()
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

// Without fencing a free lock is taken with one SET NX (a string); every
// other path sees it as the hash it stands for: a retried call, reentrancy
// (the key becomes a hash with count 2), refusal with the remaining TTL,
// extend, release, Inspect and Scan.
func TestAcquireFastPath(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	a1 := n.Lock("f", "alice", "att-1", false)
	if ok, _, fence, err := a1.Acquire(ctx, 2*time.Second); !ok || err != nil || fence != 0 {
		t.Fatalf("first acquire: %v %d %v", ok, fence, err)
	}
	if typ := lockType(t, n, "f"); typ != "string" {
		t.Fatalf("a single unfenced holder is a %s, want the fast path's string", typ)
	}
	// A retried call of the same attempt: granted, still one share.
	if ok, _, _, err := a1.Acquire(ctx, 2*time.Second); !ok || err != nil {
		t.Fatalf("retried acquire: %v %v", ok, err)
	}
	st, err := n.Inspect(ctx, "f")
	if err != nil || !st.Present || st.Holders["alice"] != 1 || st.Attempts != 1 || st.TTL <= 0 {
		t.Fatalf("Inspect of a fast-path lock: %+v %v", st, err)
	}
	if names, err := n.Scan(ctx, "*", 0); err != nil || len(names) != 1 || names[0] != "f" {
		t.Fatalf("Scan: %v %v", names, err)
	}
	// Another owner is refused with the holder's remaining TTL, and can
	// neither release nor extend.
	b := n.Lock("f", "bob", "att-9", false)
	if ok, rem, _, err := b.Acquire(ctx, time.Second); ok || err != nil || rem <= time.Second || rem > 2*time.Second {
		t.Fatalf("other owner: granted=%v remaining=%v err=%v", ok, rem, err)
	}
	if ok, _ := b.Release(ctx); ok {
		t.Fatal("non-owner released a fast-path lock")
	}
	if ok, _ := b.Extend(ctx, time.Minute); ok {
		t.Fatal("non-owner extended a fast-path lock")
	}
	// The holder extends it (still a string afterwards or not, the TTL grows).
	if ok, err := a1.Extend(ctx, time.Minute); !ok || err != nil {
		t.Fatalf("extend: %v %v", ok, err)
	}
	if st, _ := n.Inspect(ctx, "f"); st.TTL <= 2*time.Second {
		t.Fatalf("TTL after extend %v", st.TTL)
	}
	// The same owner again: reentrant through the script, count 2, and the
	// longer of the two claims kept.
	a2 := n.Lock("f", "alice", "att-2", false)
	if ok, _, _, err := a2.Acquire(ctx, time.Second); !ok || err != nil {
		t.Fatalf("reentrant acquire: %v %v", ok, err)
	}
	st, _ = n.Inspect(ctx, "f")
	if typ := lockType(t, n, "f"); typ != "hash" || st.Holders["alice"] != 2 || st.Attempts != 2 || st.TTL <= 2*time.Second {
		t.Fatalf("after reentry: type %s, %+v", typ, st)
	}
	if ok, _ := a1.Release(ctx); !ok {
		t.Fatal("release of the first (promoted) share failed")
	}
	if ok, _, _, _ := b.Acquire(ctx, time.Second); ok {
		t.Fatal("lock free while the second share is held")
	}
	if ok, _ := a2.Release(ctx); !ok {
		t.Fatal("release of the second share failed")
	}
	if typ := lockType(t, n, "f"); typ != "none" {
		t.Fatalf("after both releases the key is a %s", typ)
	}
	// Released for good: a second release finds nothing.
	if ok, _ := a1.Release(ctx); ok {
		t.Fatal("released twice")
	}
}

// A fast-path lock excludes read-write and fair acquisitions of the same
// name, and an operator's force-release removes it (a held force's
// FinishForce leaves a real lock alone).
func TestFastPathAndOtherLocks(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	p := n.Lock("x", "plain", "p1", false)
	if ok, _, _, _ := p.Acquire(ctx, 5*time.Second); !ok {
		t.Fatal("plain acquire")
	}
	if ok, rem, _, err := n.RWLock("x", "r", "r1", false, false).Acquire(ctx, time.Second); ok || err != nil || rem <= time.Second {
		t.Fatalf("read share over a fast-path lock: %v %v %v", ok, rem, err)
	}
	if ok, rem, _, err := n.RWLock("x", "plain", "r2", true, false).Acquire(ctx, time.Second); ok || err != nil || rem <= time.Second {
		t.Fatalf("write share over a fast-path lock: %v %v %v", ok, rem, err)
	}
	if ok, _ := p.Release(ctx); !ok {
		t.Fatal("release after the read-write refusals (the lock was promoted)")
	}

	if ok, _, _, _ := p.Acquire(ctx, 5*time.Second); !ok {
		t.Fatal("plain acquire again")
	}
	if err := n.FinishForce(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if st, _ := n.Inspect(ctx, "x"); !st.Present || st.Holders["plain"] != 1 {
		t.Fatalf("FinishForce removed a real lock: %+v", st)
	}
	if removed, err := n.ForceRelease(ctx, "x", Force{By: "op"}); !removed || err != nil {
		t.Fatalf("force release of a fast-path lock: %v %v", removed, err)
	}
	if typ := lockType(t, n, "x"); typ != "none" {
		t.Fatalf("after force release the key is a %s", typ)
	}
}

func TestFastValue(t *testing.T) {
	for _, tc := range []struct{ owner, attempt, want string }{
		{"id:5", "id:5.1", "id:5.1"},         // quorum's own: compact
		{"a.b:5", "a.b:5.z", "a.b:5.z"},      // a '.' in the owner is fine
		{"alice", "att-1", "alice\x00att-1"}, // unrelated attempt: owner\0attempt
		{"id:5", "id:5.", "id:5\x00id:5."},   // empty n
		{"id:5", "id:5.1.2", "id:5\x00id:5.1.2"},
		{"", ".1", "\x00.1"},
	} {
		v := FastValue(tc.owner, tc.attempt)
		if v != tc.want {
			t.Errorf("FastValue(%q, %q) = %q, want %q", tc.owner, tc.attempt, v, tc.want)
		}
		if o, a, ok := SplitFastValue(v); !ok || o != tc.owner || a != tc.attempt {
			t.Errorf("SplitFastValue(%q) = %q %q %v", v, o, a, ok)
		}
	}
	if _, _, ok := SplitFastValue("plain"); ok {
		t.Error("a string in neither form split")
	}
}

// The compact form (the value is the attempt id, owner.n): the same life
// as TestAcquireFastPath, and the watchdog's Extend keeps the string.
func TestCompactFastPath(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	a1 := n.Lock("c", "cl:7", "cl:7.1", false)
	if ok, _, _, err := a1.Acquire(ctx, 2*time.Second); !ok || err != nil {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if v, _ := n.client.Get(ctx, n.Keys("c").Lock).Result(); v != "cl:7.1" {
		t.Fatalf("value %q, want the attempt id alone", v)
	}
	if ok, _, _, err := a1.Acquire(ctx, 2*time.Second); !ok || err != nil {
		t.Fatalf("retried acquire: %v %v", ok, err)
	}
	if st, err := n.Inspect(ctx, "c"); err != nil || st.Holders["cl:7"] != 1 || st.Attempts != 1 {
		t.Fatalf("Inspect: %+v %v", st, err)
	}
	// Another owner, also compact, and one with a '.' prefix collision.
	for _, b := range []*Lock{n.Lock("c", "cl:8", "cl:8.1", false), n.Lock("c", "cl", "cl:7.1x", false)} {
		if ok, rem, _, err := b.Acquire(ctx, time.Second); ok || err != nil || rem <= time.Second {
			t.Fatalf("other owner %s: %v %v %v", b.val, ok, rem, err)
		}
		if ok, _ := b.Release(ctx); ok {
			t.Fatal("non-owner released")
		}
		if ok, _ := b.Extend(ctx, time.Minute); ok {
			t.Fatal("non-owner extended")
		}
	}
	if ok, err := a1.Extend(ctx, time.Minute); !ok || err != nil {
		t.Fatalf("extend: %v %v", ok, err)
	}
	if typ := lockType(t, n, "c"); typ != "string" {
		t.Fatalf("after Extend the lock is a %s, want the string kept", typ)
	}
	// Reentrant: the same owner's second attempt promotes it.
	a2 := n.Lock("c", "cl:7", "cl:7.2", false)
	if ok, _, _, err := a2.Acquire(ctx, time.Second); !ok || err != nil {
		t.Fatalf("reentrant: %v %v", ok, err)
	}
	if st, _ := n.Inspect(ctx, "c"); lockType(t, n, "c") != "hash" || st.Holders["cl:7"] != 2 || st.TTL <= 2*time.Second {
		t.Fatalf("after reentry: %+v", st)
	}
	if ok, _ := a1.Extend(ctx, time.Minute); !ok {
		t.Fatal("extend of the promoted share")
	}
	if ok, _ := a1.Release(ctx); !ok {
		t.Fatal("release of the first share")
	}
	if ok, _ := a2.Release(ctx); !ok {
		t.Fatal("release of the second share")
	}
	if typ := lockType(t, n, "c"); typ != "none" {
		t.Fatalf("after both releases: %s", typ)
	}
}

// A lock written in the form of earlier versions (owner\0attempt, with a
// labelled owner) is still read, refused to others and given back by its
// holder (rolling upgrade).
func TestLegacyFastValue(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	k := n.Keys("old").Lock
	old := n.Lock("old", "billing#2f1c:3", "billing#2f1c:4", false)
	if err := n.client.Set(ctx, k, "billing#2f1c:3\x00billing#2f1c:4", 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, rem, _, err := n.Lock("old", "cl:1", "cl:1.1", false).Acquire(ctx, time.Second); ok || err != nil || rem <= time.Second {
		t.Fatalf("new client over an old lock: %v %v %v", ok, rem, err)
	}
	if st, _ := n.Inspect(ctx, "old"); st.Holders["billing#2f1c:3"] != 1 {
		t.Fatalf("Inspect: %+v", st)
	}
	if ok, _ := old.Extend(ctx, time.Minute); !ok {
		t.Fatal("old holder's extend")
	}
	if ok, _ := old.Release(ctx); !ok {
		t.Fatal("old holder's release")
	}
}

// ExpectHeld only skips the SET NX: a free lock is still granted (by the
// script, in the same string form), a held one refused with its TTL.
func TestExpectHeld(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	a := n.Lock("e", "cl:1", "cl:1.1", false).ExpectHeld()
	if ok, _, _, err := a.Acquire(ctx, 2*time.Second); !ok || err != nil {
		t.Fatalf("free lock with ExpectHeld: %v %v", ok, err)
	}
	if v, _ := n.client.Get(ctx, n.Keys("e").Lock).Result(); v != "cl:1.1" {
		t.Fatalf("value %q, want the fast path's string", v)
	}
	b := n.Lock("e", "cl:2", "cl:2.1", false).ExpectHeld()
	if ok, rem, _, err := b.Acquire(ctx, time.Second); ok || err != nil || rem <= time.Second {
		t.Fatalf("held lock with ExpectHeld: %v %v %v", ok, rem, err)
	}
	if ok, _ := a.Release(ctx); !ok {
		t.Fatal("release")
	}
}
