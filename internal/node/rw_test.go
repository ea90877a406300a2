package node

import (
	"strconv"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
)

// One step of a read-write script scenario on one node.
type rwStep struct {
	op      string // "r", "w" (acquire), "u" (release), "x" (extend)
	owner   string
	attempt string
	want    bool
}

func TestRWScripts(t *testing.T) {
	_, n := start(t)
	cases := []struct {
		name  string
		steps []rwStep
	}{
		{"readers share", []rwStep{
			{"r", "a", "1", true}, {"r", "b", "2", true}, {"r", "c", "3", true},
		}},
		{"reader excludes writer", []rwStep{
			{"r", "a", "1", true}, {"w", "b", "2", false}, {"u", "a", "1", true}, {"w", "b", "3", true},
		}},
		{"writer excludes readers and writers", []rwStep{
			{"w", "a", "1", true}, {"r", "b", "2", false}, {"w", "b", "3", false},
		}},
		{"writer may read too", []rwStep{
			{"w", "a", "1", true}, {"r", "a", "2", true}, {"r", "b", "3", false},
			// The write share goes; a's read remains: others may read now, not write.
			{"u", "a", "1", true}, {"r", "b", "4", true}, {"w", "c", "5", false},
		}},
		{"reentrant write", []rwStep{
			{"w", "a", "1", true}, {"w", "a", "2", true}, {"u", "a", "1", true}, {"r", "b", "3", false},
			{"u", "a", "2", true}, {"r", "b", "4", true},
		}},
		{"no upgrade", []rwStep{
			{"r", "a", "1", true}, {"w", "a", "2", false},
		}},
		{"retried attempt counts once", []rwStep{
			{"r", "a", "1", true}, {"r", "a", "1", true}, {"u", "a", "1", true}, {"u", "a", "1", false}, {"w", "b", "2", true},
		}},
		{"extend only what is held", []rwStep{
			{"x", "a", "1", false}, {"r", "a", "1", true}, {"x", "a", "1", true}, {"u", "a", "1", true}, {"x", "a", "1", false},
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "rw-" + strconv.Itoa(i)
			for j, s := range tc.steps {
				l := n.RWLock(name, s.owner, s.attempt, s.op == "w", true)
				var got bool
				var err error
				switch s.op {
				case "r", "w":
					got, _, _, err = l.Acquire(t.Context(), time.Second)
				case "u":
					got, err = l.Release(t.Context())
				case "x":
					got, err = l.Extend(t.Context(), time.Second)
				}
				if err != nil || got != s.want {
					t.Fatalf("step %d %+v: got %v, %v", j, s, got, err)
				}
			}
		})
	}
}

// A Mutex and a read-write lock of one name exclude each other; the mode is
// visible to Inspect.
func TestRWAndPlainLockExclude(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	r := n.RWLock("shared", "a", "1", false, false)
	if ok, _, _, err := r.Acquire(ctx, time.Second); !ok || err != nil {
		t.Fatalf("read: %v %v", ok, err)
	}
	if st, _ := n.Inspect(ctx, "shared"); st.Mode != "read" || !st.Present {
		t.Fatalf("Inspect of a read lock: %+v", st)
	}
	// Even the same owner: a plain lock never joins readers.
	if ok, pttl, _, err := n.Lock("shared", "a", "2", false).Acquire(ctx, time.Second); ok || err != nil || pttl <= 0 {
		t.Fatalf("plain lock over a read lock: granted=%v pttl=%v err=%v", ok, pttl, err)
	}
	_, _ = r.Release(ctx)
	if ok, _, _, _ := n.Lock("shared", "a", "3", false).Acquire(ctx, time.Second); !ok {
		t.Fatal("plain lock on a free name refused")
	}
	if ok, pttl, _, err := n.RWLock("shared", "a", "4", false, false).Acquire(ctx, time.Second); ok || err != nil || pttl <= 0 {
		t.Fatalf("read lock over a plain lock: granted=%v pttl=%v err=%v", ok, pttl, err)
	}
}

// A reader that never releases does not outlive its own deadline while
// another reader keeps the key alive; then a writer gets in.
func TestRWExpiredShareIsDropped(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	stale := n.RWLock("e", "crashed", "1", false, false)
	if ok, _, _, _ := stale.Acquire(ctx, 200*time.Millisecond); !ok {
		t.Fatal("read refused")
	}
	live := n.RWLock("e", "live", "2", false, false)
	if ok, _, _, _ := live.Acquire(ctx, 2*time.Second); !ok {
		t.Fatal("second read refused")
	}
	time.Sleep(300 * time.Millisecond) // time passing is the test: the stale share's 200 ms runs out
	if ok, _ := stale.Extend(ctx, time.Second); ok {
		t.Fatal("an expired share was extended")
	}
	if ok, _ := live.Release(ctx); !ok {
		t.Fatal("live reader's release")
	}
	// Only the expired share is left: a writer gets in.
	if ok, _, _, err := n.RWLock("e", "w", "3", true, false).Acquire(ctx, time.Second); !ok || err != nil {
		t.Fatalf("writer after the last live reader left: %v %v", ok, err)
	}
}

// The fencing counter goes up when the lock passes from free to held:
// overlapping readers share a value, the next writer is above it.
func TestRWFence(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	presetFence(t, n, "f") // counts from fenceSeeded (a new counter starts at the clock: TestFenceSeed)
	acq := func(owner, att string, write bool) (*RWLock, int64) {
		l := n.RWLock("f", owner, att, write, true)
		ok, _, f, err := l.Acquire(ctx, time.Second)
		if !ok || err != nil {
			t.Fatalf("%s %s: %v %v", owner, att, ok, err)
		}
		return l, f
	}
	r1, f1 := acq("a", "1", false)
	r2, f2 := acq("b", "2", false)
	if f1 != fenceSeeded+1 || f2 != f1 {
		t.Fatalf("overlapping readers: tokens %d %d, want %d for both", f1, f2, fenceSeeded+1)
	}
	_, _ = r1.Release(ctx)
	_, _ = r2.Release(ctx)
	w, f3 := acq("c", "3", true)
	if f3 != fenceSeeded+2 {
		t.Fatalf("writer after readers: token %d, want %d", f3, fenceSeeded+2)
	}
	if ok, err := w.Fence(ctx, fenceSeeded+7); !ok || err != nil {
		t.Fatalf("fence write-back: %v %v", ok, err)
	}
	_, _ = w.Release(ctx)
	if _, f4 := acq("d", "4", false); f4 != fenceSeeded+8 {
		t.Fatalf("reader after a write-back of +7: token %d, want %d", f4, fenceSeeded+8)
	}
}

// Release publishes when the lock became free or readers may enter, not
// when readers remain.
func TestRWReleasePublishes(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	signal := make(chan struct{}, 1)
	ready := make(chan struct{}, 1)
	w := n.watch("p", signal, ready, true)
	defer w.Stop(false)
	<-ready
	heard := func() bool {
		select {
		case <-signal:
			return true
		case <-time.After(300 * time.Millisecond):
			return false
		}
	}
	a := n.RWLock("p", "a", "1", false, false)
	b := n.RWLock("p", "b", "2", false, false)
	a.Acquire(ctx, time.Second)
	b.Acquire(ctx, time.Second)
	a.Release(ctx)
	if heard() {
		t.Fatal("a release with a reader left published")
	}
	b.Release(ctx)
	if !heard() {
		t.Fatal("the last reader's release did not publish")
	}
	wr := n.RWLock("p", "c", "3", true, false)
	rd := n.RWLock("p", "c", "4", false, false)
	wr.Acquire(ctx, time.Second)
	rd.Acquire(ctx, time.Second)
	wr.Release(ctx)
	if !heard() {
		t.Fatal("the end of the write share (readers may enter) did not publish")
	}
}

// Checks in the same round trip: INFO server reports the server, WAIT
// counts replicas, and both work for the read-write scripts too. TTLs are
// long: a loaded machine can spend most of a second in WAIT, and an expired
// lock would make the extend fail for the wrong reason.
func TestChecked(t *testing.T) {
	s, n := start(t)
	ctx := t.Context()
	replica := localredis.StartT(t, localredis.Config{ReplicaOf: s.Addr()})
	waitLinkUp(t, replica)
	presetFence(t, n, "c")
	l := n.Lock("c", "a", "1", true)
	ok, _, fence, c, err := l.AcquireChecked(ctx, 10*time.Second, Checks{Replicas: 1, WaitTimeout: time.Second, Server: true})
	if !ok || err != nil || fence != fenceSeeded+1 {
		t.Fatalf("AcquireChecked: %v %d %v", ok, fence, err)
	}
	if c.Acked != 1 || c.RunID == "" || c.Server != s.Addr() {
		t.Fatalf("checks: %+v, want 1 replica acknowledged and a run_id from %s", c, s.Addr())
	}
	if ok, c, err := l.ExtendChecked(ctx, 10*time.Second, Checks{Replicas: 2, WaitTimeout: 50 * time.Millisecond}); !ok || err != nil || c.Acked != 1 {
		t.Fatalf("ExtendChecked asking 2 replicas of 1: %v %+v %v", ok, c, err)
	}
	// The script cache is emptied (as after a restart): loaded again.
	if err := s.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rw := n.RWLock("c2", "a", "2", false, true)
	if ok, _, _, c, err := rw.AcquireChecked(ctx, 10*time.Second, Checks{Replicas: 1, WaitTimeout: time.Second}); !ok || err != nil || c.Acked != 1 {
		t.Fatalf("read AcquireChecked after SCRIPT FLUSH: %v %+v %v", ok, c, err)
	}
	if ok, c, err := rw.FenceChecked(ctx, 5, Checks{Server: true}); !ok || err != nil || c.Acked != -1 || c.RunID == "" {
		t.Fatalf("FenceChecked: %v %+v %v", ok, c, err)
	}
}

func waitLinkUp(t *testing.T, replica *localredis.Server) {
	t.Helper()
	rc := replica.Client()
	defer rc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s, _ := rc.Info(t.Context(), "replication").Result()
		if ParseInfo(s)["master_link_status"] == "up" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("replication link not up after 10s")
}
