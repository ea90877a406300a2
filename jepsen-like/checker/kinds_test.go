package checker

import (
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// hold adds an Ok acquire of names (shared or exclusive, in role) over
// [inv, comp] and its release at rel.
func (b *hb) hold(w int, names []string, shared bool, role string, inv, comp, rel float64) history.OpID {
	id := b.add(history.Op{Worker: w, Kind: history.Acquire, Invoke: ms(inv), Complete: ms(comp),
		Locks: names, Shared: shared, Role: role})
	b.release(w, id, rel)
	return id
}

func TestExclusionByNameAndShare(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *hb)
		want  int
	}{
		{"readers overlap", func(b *hb) {
			b.hold(0, nil, true, "", 0, 1, 10)
			b.hold(1, nil, true, "", 2, 3, 12)
		}, 0},
		{"writer beside a reader", func(b *hb) {
			b.hold(0, nil, true, "", 0, 1, 10)
			b.hold(1, nil, false, RoleWriter, 2, 3, 12)
		}, 1},
		{"disjoint name sets", func(b *hb) {
			b.hold(0, []string{"a", "b"}, false, "", 0, 1, 10)
			b.hold(1, []string{"c"}, false, "", 2, 3, 12)
		}, 0},
		{"sets that meet in one name", func(b *hb) {
			b.hold(0, []string{"a", "b"}, false, "", 0, 1, 10)
			b.hold(1, []string{"b", "c"}, false, "", 2, 3, 12)
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hb
			tt.build(&b)
			r := Check(b.h(), WithoutLinearizability())
			if r.MutualExclusion.Count != tt.want {
				t.Fatalf("MutualExclusion = %v, want count %d", r.MutualExclusion, tt.want)
			}
		})
	}
}

// A set held beside a holder of one of its names is a grant that missed
// that name; sets that never meet, or meet one after the other, are not.
func TestAllOrNone(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *hb)
		want  Verdict
		count int
	}{
		{"no set of several names", func(b *hb) {
			b.hold(0, []string{"c"}, false, "", 0, 1, 10)
		}, Unknown, 0},
		{"set, then its name", func(b *hb) {
			b.hold(0, []string{"a", "b", "c"}, false, "", 0, 1, 10)
			b.hold(1, []string{"c"}, false, "", 2, 11, 20)
		}, Ok, 0},
		{"set beside a holder of its name", func(b *hb) {
			b.hold(0, []string{"a", "b", "c"}, false, "", 0, 1, 10)
			b.hold(1, []string{"c"}, false, "", 2, 3, 12)
		}, Violated, 1},
		{"disjoint sets at once", func(b *hb) {
			b.hold(0, []string{"a", "b"}, false, "", 0, 1, 10)
			b.hold(1, []string{"c"}, false, "", 2, 3, 12)
		}, Ok, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hb
			tt.build(&b)
			r := Check(b.h(), WithoutLinearizability()).AllOrNone
			if r.Verdict != tt.want || r.Count != tt.count {
				t.Fatalf("AllOrNone = %v, want %v with count %d", r, tt.want, tt.count)
			}
		})
	}
}

func TestSignalFirst(t *testing.T) {
	build := func(signalAt float64) history.History {
		var b hb
		a := b.hold(0, nil, false, "", 0, 1, 2000) // held on (paused) until 2 s
		if signalAt > 0 {
			b.add(history.Op{Worker: 0, Kind: history.Signal, Lease: a, Invoke: ms(signalAt), Complete: ms(signalAt)})
		}
		b.hold(1, nil, false, "", 500, 1000, 1100) // took over at 1 s
		h := b.h()
		h.Meta = map[string]string{"signals": "done"}
		return h
	}
	if r := Check(build(900), WithoutLinearizability(), WithSignalGrace(1)).SignalFirst; r.Verdict != Ok {
		t.Errorf("signal before the takeover: %v, want ok", r)
	}
	if r := Check(build(1500), WithoutLinearizability(), WithSignalGrace(1)).SignalFirst; r.Verdict != Violated || r.Count != 1 {
		t.Errorf("signal after the takeover: %v, want violated (1)", r)
	}
	if r := Check(build(0), WithoutLinearizability(), WithSignalGrace(1)).SignalFirst; r.Verdict != Violated {
		t.Errorf("no signal: %v, want violated", r)
	}
	h := build(0)
	h.Meta = nil
	if r := Check(h, WithoutLinearizability()).SignalFirst; r.Verdict != Unknown {
		t.Errorf("leases that do not signal: %v, want unknown", r)
	}
}

func TestWriterProgress(t *testing.T) {
	const bound = 370 * time.Millisecond
	writer := func(b *hb, inv, comp float64) {
		b.add(history.Op{Worker: 1, Kind: history.Acquire, Role: RoleWriter, Invoke: ms(inv), Complete: ms(comp), Outcome: history.Fail})
	}
	// Readers 0 and 2 keep the lock shared from 1 ms to 2,100 ms, their
	// tenures overlapping; then it stands free.
	var b hb
	b.hold(0, nil, true, "", 0, 1, 900)
	b.hold(2, nil, true, "", 800, 850, 1600)
	b.hold(0, nil, true, "", 1500, 1550, 2100)
	writer(&b, 2, 2002)                                 // held off by the readers throughout: not counted
	b.hold(3, nil, false, RoleWriter, 2040, 2050, 2060) // another writer goes through
	writer(&b, 2100, 4100)                              // free from 2,100 ms on: starved
	b.nemesis(history.NemesisStart, "partition", 5000)
	writer(&b, 4900, 6900) // free, but a fault came: not counted
	b.nemesis(history.NemesisEnd, "partition", 5500)
	r := Check(b.h(), WithoutLinearizability(), WithWakeupBound(bound)).WriterProgress
	if r.Verdict != Violated || r.Count != 1 {
		t.Fatalf("WriterProgress = %v, want violated (1): the writer that waited on a free lock outside the fault", r)
	}
	if r := Check(b.h(), WithoutLinearizability()).WriterProgress; r.Verdict != Unknown {
		t.Errorf("no wakeup bound: %v, want unknown", r)
	}

	// A gap between readers shorter than the bound is not counted; one
	// longer is.
	for _, tc := range []struct {
		gap  float64
		want int
	}{{300, 0}, {400, 1}} {
		var g hb
		g.hold(0, nil, true, "", 0, 1, 1000)
		g.hold(2, nil, true, "", 1000+tc.gap, 1000+tc.gap, 2500)
		writer(&g, 2, 2002)
		if r := Check(g.h(), WithoutLinearizability(), WithWakeupBound(bound)).WriterProgress; r.Count != tc.want {
			t.Errorf("free for %v ms within the wait: count %d, want %d (%v)", tc.gap, r.Count, tc.want, r)
		}
	}

	// Readers that keep the lock shared hold off every writer for two
	// acquire timeouts: writers starved as a group, counted once per pair
	// of one writer's successive failures.
	var s hb
	for at := 0.0; at < 4200; at += 200 {
		s.hold(0, nil, true, "", at, at+1, at+300)
	}
	writer(&s, 2, 2002)
	writer(&s, 2003, 4003)
	if r := Check(s.h(), WithoutLinearizability(), WithWakeupBound(bound)).WriterProgress; r.Count != 1 {
		t.Errorf("writers starved for two acquire timeouts: %v, want violated (1)", r)
	}
	s.hold(3, nil, false, RoleWriter, 3000, 3001, 3002)
	if r := Check(s.h(), WithoutLinearizability(), WithWakeupBound(bound)).WriterProgress; r.Verdict != Ok {
		t.Errorf("another writer went through meanwhile: %v, want ok", r)
	}

	var ok hb
	ok.hold(1, nil, false, RoleWriter, 0, 1, 2)
	if r := Check(ok.h(), WithoutLinearizability(), WithWakeupBound(bound)).WriterProgress; r.Verdict != Ok {
		t.Errorf("a writer that got the lock: %v", r)
	}
	if r := Check(history.History{}, WithoutLinearizability(), WithWakeupBound(bound)).WriterProgress; r.Verdict != Unknown {
		t.Errorf("no writer: %v, want unknown", r)
	}
}

// Fair waiters that wait longer than the bound with nobody granted are a
// stuck line, unless a fault was on; waits cut by grants are not.
func TestFairProgress(t *testing.T) {
	wait := func(b *hb, w int, from, to float64, out history.Outcome) {
		b.add(history.Op{Worker: w, Kind: history.Acquire, Role: RoleFair, Invoke: ms(from), Complete: ms(to), Outcome: out})
	}
	tests := []struct {
		name  string
		build func(b *hb)
		want  Verdict
	}{
		{"grants within the bound", func(b *hb) {
			b.hold(0, nil, false, RoleFair, 0, 1, 300)
			wait(b, 1, 10, 800, history.Ok)
			wait(b, 2, 20, 1500, history.Ok)
		}, Ok},
		{"line stuck past the bound", func(b *hb) {
			b.hold(0, nil, false, RoleFair, 0, 1, 300)
			wait(b, 1, 10, 1000, history.Fail) // timed out
			wait(b, 1, 1002, 2000, history.Fail)
			wait(b, 2, 20, 2100, history.Fail)
		}, Violated},
		{"stuck while a fault was on", func(b *hb) {
			b.hold(0, nil, false, RoleFair, 0, 1, 300)
			b.nemesis(history.NemesisStart, "pause", 100)
			wait(b, 1, 10, 2000, history.Fail)
			b.nemesis(history.NemesisEnd, "pause", 1900)
		}, Ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hb
			tt.build(&b)
			r := Check(b.h(), WithoutLinearizability(), WithFairBound(time.Second)).FairProgress
			if r.Verdict != tt.want {
				t.Fatalf("FairProgress = %v, want %v", r, tt.want)
			}
		})
	}
	var b hb
	wait(&b, 1, 10, 5000, history.Fail)
	if r := Check(b.h(), WithoutLinearizability()).FairProgress; r.Verdict != Unknown {
		t.Errorf("without a bound: %v, want unknown", r)
	}
}

func TestFairOrder(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *hb)
		want  Verdict
	}{
		{"in order", func(b *hb) {
			b.hold(0, nil, false, RoleFair, 0, 1, 300)
			b.hold(1, nil, false, RoleFair, 10, 301, 400)  // queued first
			b.hold(2, nil, false, RoleFair, 100, 401, 500) // queued second
		}, Ok},
		{"overtaken", func(b *hb) {
			b.hold(0, nil, false, RoleFair, 0, 1, 300)
			b.hold(1, nil, false, RoleFair, 10, 401, 500)  // queued first, served second
			b.hold(2, nil, false, RoleFair, 100, 301, 400) // overtook worker 1
		}, Violated},
		{"within the slack", func(b *hb) {
			b.hold(0, nil, false, RoleFair, 0, 1, 300)
			b.hold(1, nil, false, RoleFair, 10, 401, 500)
			b.hold(2, nil, false, RoleFair, 20, 301, 400) // arrived 10 ms later: not ordered
		}, Ok},
		{"overtaken while a fault was on", func(b *hb) {
			b.hold(0, nil, false, RoleFair, 0, 1, 300)
			b.nemesis(history.NemesisStart, "crash", 50)
			b.hold(1, nil, false, RoleFair, 10, 401, 500)
			b.hold(2, nil, false, RoleFair, 100, 301, 400)
			b.nemesis(history.NemesisEnd, "crash", 150)
		}, Ok},
		{"overtaken and timed out", func(b *hb) {
			b.hold(0, nil, false, RoleFair, 0, 1, 300)
			b.add(history.Op{Worker: 1, Kind: history.Acquire, Role: RoleFair, Invoke: ms(10), Complete: ms(2010), Outcome: history.Fail})
			b.hold(2, nil, false, RoleFair, 100, 301, 400)
		}, Violated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hb
			tt.build(&b)
			r := Check(b.h(), WithoutLinearizability(), WithFairSlack(ms(50))).FairOrder
			if r.Verdict != tt.want {
				t.Fatalf("FairOrder = %v, want %s", r, tt.want)
			}
		})
	}
	if r := Check(history.History{}, WithoutLinearizability()).FairOrder; r.Verdict != Unknown {
		t.Errorf("no fair waiter: %v, want unknown", r)
	}
}

func TestSummarizeKinds(t *testing.T) {
	var b hb
	b.hold(0, nil, false, RoleFair, 0, 1, 300)
	b.hold(1, nil, false, RoleFair, 10, 401, 500)
	b.hold(2, nil, false, RoleFair, 100, 301, 400)
	s := Check(b.h(), WithoutLinearizability()).Summarize(FairOrder)
	if s.Verdict != Violated || s.Violations != 1 {
		t.Fatalf("Summarize(FairOrder) = %+v", s)
	}
}

func TestTokenOrderByNameAndShare(t *testing.T) {
	acq := func(b *hb, w int, names []string, shared bool, at float64, token uint64) {
		b.add(history.Op{Worker: w, Kind: history.Acquire, Invoke: ms(at), Complete: ms(at + 1), Token: token, Locks: names, Shared: shared})
	}
	var ok hb
	acq(&ok, 0, nil, true, 0, 5)
	acq(&ok, 1, nil, true, 2, 4) // readers: no order among them
	acq(&ok, 2, nil, false, 4, 6)
	acq(&ok, 3, []string{"x"}, false, 6, 1) // another name: its own order
	if r := Check(ok.h(), WithoutLinearizability()).TokenOrder; r.Verdict != Ok {
		t.Errorf("TokenOrder = %v, want ok", r)
	}
	var bad hb
	acq(&bad, 0, nil, true, 0, 5)
	acq(&bad, 1, nil, false, 2, 5) // a writer after a reader with its token
	if r := Check(bad.h(), WithoutLinearizability()).TokenOrder; r.Verdict != Violated || r.Count != 1 {
		t.Errorf("TokenOrder = %v, want violated (1)", r)
	}
}
