package node

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestInspectAndForcedRecord(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	presetFence(t, n, "ins")
	a := n.Lock("ins", "alice", "1", true)
	if ok, _, _, err := a.Acquire(ctx, 5*time.Second); !ok || err != nil {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if ok, _, _, err := n.Lock("ins", "alice", "2", true).Acquire(ctx, 5*time.Second); !ok || err != nil {
		t.Fatalf("reentrant acquire: %v %v", ok, err)
	}
	st, err := n.Inspect(ctx, "ins")
	if err != nil {
		t.Fatal(err)
	}
	// fenceSeeded+2: the reentrant attempt's fast-path INCR counted too.
	if !st.Present || st.Holders["alice"] != 2 || len(st.Holders) != 1 || st.Attempts != 2 || st.Fence != fenceSeeded+2 || st.Forced != nil {
		t.Fatalf("held: %+v", st)
	}
	if st.TTL <= 0 || st.TTL > 5*time.Second {
		t.Fatalf("ttl %v", st.TTL)
	}

	before := time.Now().Add(-time.Second)
	if ok, err := n.ForceRelease(ctx, "ins", Force{By: "bob@ops"}); !ok || err != nil {
		t.Fatalf("force: %v %v", ok, err)
	}
	st, err = n.Inspect(ctx, "ins")
	if err != nil {
		t.Fatal(err)
	}
	if st.Present || len(st.Holders) != 0 || st.Fence != fenceSeeded+2 {
		t.Fatalf("after force: %+v (the fencing counter must stay)", st)
	}
	if f := st.Forced; f == nil || f.By != "bob@ops" || !f.Removed || f.At.Before(before) || f.At.After(time.Now().Add(time.Second)) {
		t.Fatalf("forced record: %+v", st.Forced)
	}
	if d := n.Client().PTTL(ctx, n.Keys("ins").Forced).Val(); d <= ForcedRecordTTL-time.Minute || d > ForcedRecordTTL {
		t.Fatalf("forced record ttl %v, want about %v", d, ForcedRecordTTL)
	}
	// Forcing a free lock records nothing: a mistyped name leaves no key.
	if ok, err := n.ForceRelease(ctx, "free", Force{By: "carol"}); ok || err != nil {
		t.Fatalf("force free: %v %v", ok, err)
	}
	if st, _ = n.Inspect(ctx, "free"); st.Present || st.Forced != nil {
		t.Fatalf("forced free: %+v %+v", st, st.Forced)
	}
	if k := n.Client().Exists(ctx, n.Keys("free").Forced).Val(); k != 0 {
		t.Fatalf("forced free left its record key")
	}
}

// A read-write lock (rw_acquire.lua's layout): the mode field is reported,
// owners come from the live shares, expired shares are not counted.
func TestInspectReadWriteLayout(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	now := time.Now().UnixMilli()
	key := n.Keys("rw").Lock
	err := n.Client().HSet(ctx, key,
		"\x00mode", "read",
		"\x00a:1", fmt.Sprintf("r:%d:reader-1", now+60_000),
		"\x00a:2", fmt.Sprintf("r:%d:reader-1", now+60_000),
		"\x00a:3", fmt.Sprintf("r:%d:reader:2", now+60_000), // owners may contain ':'
		"\x00a:4", fmt.Sprintf("r:%d:gone", now-60_000),
	).Err()
	if err != nil {
		t.Fatal(err)
	}
	n.Client().PExpire(ctx, key, time.Minute)
	st, err := n.Inspect(ctx, "rw")
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode != "read" || st.Attempts != 3 || len(st.Holders) != 2 || st.Holders["reader-1"] != 2 || st.Holders["reader:2"] != 1 {
		t.Fatalf("read-write state: %+v", st)
	}
}

func TestInspectMany(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	var names []string
	for i := range 300 { // more than one batch
		name := fmt.Sprintf("m%03d", i)
		names = append(names, name)
		if i%2 == 0 {
			if ok, _, _, err := n.Lock(name, fmt.Sprint("o", i), "a", false).Acquire(ctx, 5*time.Second); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
	}
	sts, err := n.InspectMany(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range sts {
		if st.Present != (i%2 == 0) || (st.Present && st.Holders[fmt.Sprint("o", i)] != 1) {
			t.Fatalf("%s: %+v", names[i], st)
		}
	}
}

func TestScan(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	held := []string{"orders/1", "orders/2", "users/7", "we*ird", "a}b"}
	for _, name := range held {
		if ok, _, _, err := n.Lock(name, "o", "a", true).Acquire(ctx, 5*time.Second); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	// Keys next to locks that are not locks: a fencing counter and a
	// force-unlock record of a free name, and unrelated keys.
	if _, err := n.ForceRelease(ctx, "gone", Force{By: "ops"}); err != nil {
		t.Fatal(err)
	}
	c := n.Client()
	c.Set(ctx, n.Keys("gone").Fence, 9, 0)
	c.Set(ctx, "other:{x}", 1, 0)
	c.HSet(ctx, "quorumlockish:{y}", "o", 1)
	for i := range 50 { // several SCAN steps
		c.Set(ctx, fmt.Sprint("filler:", i), 1, 0)
	}
	tests := []struct {
		pattern string
		want    []string
	}{
		{"", []string{"a}b", "orders/1", "orders/2", "users/7", "we*ird"}},
		{"orders/*", []string{"orders/1", "orders/2"}},
		{"users/?", []string{"users/7"}},
		{"nothing*", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			got, err := n.Scan(ctx, tt.pattern, 10)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Scan(%q) = %q, want %q", tt.pattern, got, tt.want)
			}
		})
	}
}

func TestGlobEscape(t *testing.T) {
	if got := globEscape(`a*b?[c]\`); got != `a\*b\?\[c\]\\` {
		t.Fatalf("got %q", got)
	}
}

// A held force leaves a tombstone that refuses every acquisition and wakes
// nobody; FinishForce removes only the tombstone and wakes waiters.
func TestForceHold(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	if ok, _, _, err := n.Lock("h", "alice", "a1", false).Acquire(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	sig := make(chan struct{}, 1)
	w := n.watch("h", sig, nil, false)
	defer w.Stop(false)
	<-w.Ready()
	if ok, err := n.ForceRelease(ctx, "h", Force{By: "ops", Hold: 5 * time.Second}); !ok || err != nil {
		t.Fatalf("force: %v %v", ok, err)
	}
	st, _ := n.Inspect(ctx, "h")
	if st.Present || len(st.Holders) != 0 || st.Forced == nil || !st.Forced.Removed {
		t.Fatalf("held force: %+v forced %+v", st, st.Forced)
	}
	ok, wait, _, err := n.Lock("h", "bob", "b1", false).Acquire(ctx, time.Minute)
	if ok || err != nil || wait <= 0 || wait > 5*time.Second {
		t.Fatalf("acquire during the hold: granted %v, wait %v, %v", ok, wait, err)
	}
	select {
	case <-sig:
		t.Fatal("a held force woke a waiter")
	case <-time.After(50 * time.Millisecond):
	}
	if err := n.FinishForce(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sig:
	case <-time.After(5 * time.Second):
		t.Fatal("FinishForce did not wake the waiter")
	}
	if ok, _, _, err := n.Lock("h", "bob", "b2", false).Acquire(ctx, time.Minute); !ok || err != nil {
		t.Fatalf("acquire after FinishForce: %v %v", ok, err)
	}
	// A late FinishForce (the tombstone expired, someone took the lock)
	// leaves that lock alone.
	if err := n.FinishForce(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if st, _ := n.Inspect(ctx, "h"); !st.Present || st.Holders["bob"] != 1 {
		t.Fatalf("FinishForce removed a lock: %+v", st)
	}
}
