package checker

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

type expect struct {
	v Verdict
	n int
}

func results(r Report) map[string]Result {
	return map[string]Result{
		"mutual_exclusion":  r.MutualExclusion,
		"lease_exclusion":   r.LeaseExclusion,
		"lost_updates":      r.LostUpdates.Result,
		"stale_accepted":    r.StaleAccepted,
		"stale_rejected":    r.StaleRejected,
		"token_order":       r.TokenOrder,
		"register":          r.Register,
		"critical_sections": r.CriticalSections,
	}
}

// assertChecks compares every check with want; a check not in want must be
// Ok with count 0.
func assertChecks(t *testing.T, r Report, want map[string]expect) {
	t.Helper()
	for name, got := range results(r) {
		w, ok := want[name]
		if !ok {
			w = expect{Ok, 0}
		}
		if got.Verdict != w.v || got.Count != w.n {
			t.Errorf("%s = %v, want %s (%d); examples %v", name, got, w.v, w.n, got.Examples)
		}
		if got.Verdict == Violated && len(got.Examples) == 0 {
			t.Errorf("%s violated without examples", name)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *hb)
		want  map[string]expect
		more  func(t *testing.T, r Report)
	}{
		{
			name: "serial clean",
			build: func(b *hb) {
				b.tenure(0, 0, 1, 0)
				b.tenure(1, 10, 2, 1)
				b.tenure(2, 20, 3, 2)
				b.tenure(0, 30, 4, 3)
			},
			more: func(t *testing.T, r Report) {
				if r.LostUpdates.Accepted != 4 || r.LostUpdates.Final != 4 || r.LostUpdates.Deficit != 0 {
					t.Errorf("lost updates arithmetic = %+v", r.LostUpdates)
				}
				if r.Tenures != 4 || r.Workers != 3 {
					t.Errorf("tenures %d workers %d", r.Tenures, r.Workers)
				}
			},
		},
		{
			name:  "empty history",
			build: func(b *hb) {},
			want:  map[string]expect{},
			more: func(t *testing.T, r Report) {
				if r.Acquires.Availability != 0 || r.Latency.Samples != 0 {
					t.Errorf("acquires %+v latency %+v", r.Acquires, r.Latency)
				}
			},
		},
		{
			// Tenure = acquire complete → release invoke: touching is not
			// overlapping.
			name: "hand-off at the same instant is not an overlap",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 100)
				b.release(0, a, 5)
				b.acquire(1, 2, 5, 2, 100)
			},
		},
		{
			name: "two overlapping tenures",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 100)
				b.release(0, a, 10)
				c := b.acquire(1, 2, 5, 2, 100)
				b.release(1, c, 8)
			},
			want: map[string]expect{"mutual_exclusion": {Violated, 1}, "lease_exclusion": {Violated, 1}},
			more: func(t *testing.T, r Report) {
				ex := r.MutualExclusion.Examples[0]
				if !slices.Equal(ex.Ops, []history.OpID{1, 3}) {
					t.Errorf("example ops = %v, want the two acquires [1 3]", ex.Ops)
				}
			},
		},
		{
			name: "three mutually overlapping tenures are three pairs",
			build: func(b *hb) {
				for w := range 3 {
					a := b.acquire(w, float64(w), float64(w)+1, uint64(w+1), 100)
					b.release(w, a, 50)
				}
			},
			want: map[string]expect{"mutual_exclusion": {Violated, 3}, "lease_exclusion": {Violated, 3}},
		},
		{
			name: "same worker's nested tenures are not a violation",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 100)
				c := b.acquire(0, 2, 3, 2, 100)
				b.release(0, c, 4)
				b.release(0, a, 5)
			},
		},
		{
			// The holder paused past its validity (Kleppmann): the clients
			// overlap, the leases do not.
			name: "pause past validity: tenures overlap, valid leases do not",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 10)
				b.release(0, a, 30)
				c := b.acquire(1, 11, 12, 2, 40)
				b.release(1, c, 20)
			},
			want: map[string]expect{"mutual_exclusion": {Violated, 1}},
		},
		{
			name: "extend pushes validity: the same pause is a lease overlap",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 10)
				b.extend(0, a, 8, 9, 25)
				b.release(0, a, 30)
				c := b.acquire(1, 11, 12, 2, 40)
				b.release(1, c, 20)
			},
			want: map[string]expect{"mutual_exclusion": {Violated, 1}, "lease_exclusion": {Violated, 1}},
		},
		{
			name: "no deadlines: lease exclusion unknown, stale writes undecidable",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 0, 0)
				b.read(0, a, 2, 0)
				b.write(0, a, 3, 1, 0, history.Ok)
				b.release(0, a, 4)
			},
			want: map[string]expect{"lease_exclusion": {Unknown, 0}, "stale_accepted": {Unknown, 0}, "token_order": {Unknown, 0}},
		},
		{
			name: "lost update: both read 0, both write 1",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 100)
				c := b.acquire(1, 0, 2, 2, 100)
				b.read(0, a, 3, 0)
				b.read(1, c, 4, 0)
				b.write(0, a, 5, 1, 1, history.Ok)
				b.write(1, c, 6, 1, 2, history.Ok)
				b.release(0, a, 7)
				b.release(1, c, 8)
			},
			want: map[string]expect{
				"mutual_exclusion": {Violated, 1}, "lease_exclusion": {Violated, 1},
				"lost_updates": {Violated, 1}, "critical_sections": {Violated, 1},
			},
			more: func(t *testing.T, r Report) {
				if r.LostUpdates.Deficit != 1 || r.LostUpdates.Final != 1 || r.LostUpdates.Accepted != 2 {
					t.Errorf("arithmetic %+v", r.LostUpdates)
				}
				// read #4 by worker 1, overwritten #5 by worker 0, lost write #6.
				if got := r.LostUpdates.Examples[0].Ops; !slices.Equal(got, []history.OpID{4, 5, 6}) {
					t.Errorf("example ops = %v, want [4 5 6]", got)
				}
			},
		},
		{
			// Kleppmann's figure: worker 0 (token 1) pauses, its lease
			// expires, worker 1 (token 2) writes, worker 0 wakes and writes.
			name: "stale write accepted by an unfenced resource",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 10)
				b.read(0, a, 2, 0)
				c := b.acquire(1, 11, 12, 2, 40)
				b.read(1, c, 13, 0)
				b.write(1, c, 14, 1, 2, history.Ok)
				b.release(1, c, 15)
				b.write(0, a, 20, 1, 1, history.Ok)
				b.release(0, a, 21)
			},
			want: map[string]expect{
				"mutual_exclusion": {Violated, 1}, "stale_accepted": {Violated, 1},
				"lost_updates": {Violated, 1}, "critical_sections": {Violated, 1},
			},
			more: func(t *testing.T, r Report) {
				if got := r.StaleAccepted.Examples[0].Ops; !slices.Equal(got, []history.OpID{5, 7}) {
					t.Errorf("stale example ops = %v, want [5 7] (the higher-token write, the stale one)", got)
				}
			},
		},
		{
			name: "same pause, fenced resource rejects the stale write",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 10)
				b.read(0, a, 2, 0)
				c := b.acquire(1, 11, 12, 2, 40)
				b.read(1, c, 13, 0)
				b.write(1, c, 14, 1, 2, history.Ok)
				b.release(1, c, 15)
				b.write(0, a, 20, 1, 1, history.Fail)
				b.release(0, a, 21)
			},
			want: map[string]expect{"mutual_exclusion": {Violated, 1}, "stale_rejected": {Ok, 1}},
			more: func(t *testing.T, r Report) {
				if got := r.StaleRejected.Examples[0].Ops; !slices.Equal(got, []history.OpID{7}) {
					t.Errorf("rejected example = %v", got)
				}
			},
		},
		{
			name: "stale write without tokens: judged by the lease deadline",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 0, 10)
				b.read(0, a, 2, 0)
				c := b.acquire(1, 11, 12, 0, 40)
				b.read(1, c, 13, 0)
				b.write(1, c, 14, 1, 0, history.Ok)
				b.release(1, c, 15)
				b.write(0, a, 20, 1, 0, history.Ok)
				b.release(0, a, 21)
			},
			want: map[string]expect{
				"mutual_exclusion": {Violated, 1}, "stale_accepted": {Violated, 1},
				"lost_updates": {Violated, 1}, "critical_sections": {Violated, 1},
				"token_order": {Unknown, 0},
			},
			more: func(t *testing.T, r Report) {
				if got := r.StaleAccepted.Examples[0].Ops; !slices.Equal(got, []history.OpID{1, 5, 7}) {
					t.Errorf("stale example = %v, want [lease 1, other's write 5, stale write 7]", got)
				}
			},
		},
		{
			// Through a fence: worker 0 (token 1) pauses past its lease and
			// writes after worker 1 (token 2) acquired, before its fenced
			// read; worker 1 reads that value, pauses past its own lease
			// and writes. Its write follows only an earlier holder's: not
			// stale (the earlier one overlapped, which mutual exclusion
			// counts).
			name: "late write over an earlier holder's late write is not stale",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 10)
				b.read(0, a, 2, 0)
				c := b.acquire(1, 11, 12, 2, 40)
				b.write(0, a, 13, 1, 1, history.Ok)
				b.release(0, a, 14)
				b.read(1, c, 15, 1)
				b.write(1, c, 50, 2, 2, history.Ok)
				b.release(1, c, 51)
			},
			want: map[string]expect{"mutual_exclusion": {Violated, 1}},
		},
		{
			// Unfenced: worker 0 paused past its lease writes over the
			// write of worker 2, a later holder than worker 1, which wrote
			// last before it.
			name: "late write over a later holder's write, not the last one, is stale",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 0, 10)
				b.read(0, a, 2, 0)
				c := b.acquire(2, 11, 12, 0, 40)
				b.read(2, c, 13, 0)
				b.write(2, c, 14, 1, 0, history.Ok)
				b.release(2, c, 15)
				d := b.acquire(1, 16, 17, 0, 80)
				b.read(1, d, 18, 1)
				b.write(1, d, 19, 2, 0, history.Ok)
				b.release(1, d, 20)
				b.write(0, a, 30, 1, 0, history.Ok)
				b.release(0, a, 31)
			},
			want: map[string]expect{
				"mutual_exclusion": {Violated, 2}, "stale_accepted": {Violated, 1},
				"lost_updates": {Violated, 1}, "critical_sections": {Violated, 1},
				"token_order": {Unknown, 0},
			},
		},
		{
			name: "late write nobody else wrote in between is not stale",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 0, 10)
				b.read(0, a, 2, 0)
				b.write(0, a, 20, 1, 0, history.Ok)
				b.release(0, a, 21)
			},
			want: map[string]expect{"token_order": {Unknown, 0}},
		},
		{
			name: "token regressions, by completion order; a repeated token counts",
			build: func(b *hb) {
				for i, tok := range []uint64{1, 3, 2, 3, 4} {
					at := float64(10 * i)
					a := b.acquire(i%2, at, at+1, tok, at+5)
					b.release(i%2, a, at+2)
				}
			},
			want: map[string]expect{"token_order": {Violated, 2}},
			more: func(t *testing.T, r Report) {
				if got := r.TokenOrder.Examples[0].Ops; !slices.Equal(got, []history.OpID{3, 5}) {
					t.Errorf("first regression = %v, want [3 5] (token 3, then token 2)", got)
				}
			},
		},
		{
			name: "write of unknown outcome makes lost updates undecidable",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 100)
				b.read(0, a, 2, 0)
				b.write(0, a, 3, 1, 1, history.Unknown)
				b.release(0, a, 4)
				c := b.acquire(1, 5, 6, 2, 100)
				b.read(1, c, 7, 1) // it did apply
				b.write(1, c, 8, 2, 2, history.Ok)
				b.release(1, c, 9)
			},
			want: map[string]expect{"lost_updates": {Unknown, 0}},
		},
		{
			name: "a read of a value never written is not linearizable",
			build: func(b *hb) {
				b.tenure(0, 0, 1, 0)
				a := b.acquire(1, 10, 11, 2, 100)
				b.read(1, a, 12, 7)
				b.release(1, a, 13)
			},
			want: map[string]expect{"register": {Violated, 1}, "critical_sections": {Violated, 1}},
			more: func(t *testing.T, r Report) {
				if len(r.Register.Examples) != 1 || !slices.Equal(r.Register.Examples[0].Ops, []history.OpID{6}) {
					t.Errorf("register example = %+v, want the read #6", r.Register.Examples)
				}
			},
		},
		{
			// A blind write overwritten by a stale read-modify-write: only
			// the final read appended by the checker exposes it to porcupine.
			name: "blind write overwritten inside a critical section",
			build: func(b *hb) {
				a := b.acquire(0, 0, 1, 1, 100)
				b.read(0, a, 2, 0)
				c := b.acquire(1, 3, 4, 2, 100)
				b.write(1, c, 5, 9, 2, history.Ok)
				b.release(1, c, 6)
				b.write(0, a, 7, 1, 1, history.Ok)
				b.release(0, a, 8)
			},
			want: map[string]expect{
				"mutual_exclusion": {Violated, 1}, "lease_exclusion": {Violated, 1},
				"lost_updates": {Violated, 2}, "stale_accepted": {Violated, 1},
				"critical_sections": {Violated, 1},
			},
		},
		{
			name: "availability and latency",
			build: func(b *hb) {
				for i, d := range []float64{1, 3, 2, 10} {
					at := float64(20 * i)
					a := b.acquire(0, at, at+d, uint64(i+1), at+50)
					b.release(0, a, at+d+1)
				}
				b.acquireOutcome(1, 0, 5, history.Fail)
				b.acquireOutcome(1, 6, 9, history.Unknown)
			},
			more: func(t *testing.T, r Report) {
				want := Acquisitions{Attempted: 6, Ok: 4, Failed: 1, Unknown: 1, Availability: 4.0 / 6}
				if r.Acquires != want {
					t.Errorf("acquires = %+v, want %+v", r.Acquires, want)
				}
				if r.Latency.Samples != 4 || r.Latency.P50 != ms(2) || r.Latency.P99 != ms(10) {
					t.Errorf("latency = %+v, want p50 2ms p99 10ms", r.Latency)
				}
				if r.Latency.P50Ms() != 2 || r.Latency.P99Ms() != 10 {
					t.Errorf("ms = %v %v", r.Latency.P50Ms(), r.Latency.P99Ms())
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hb
			tt.build(&b)
			h := b.h()
			if err := h.Validate(); err != nil {
				t.Fatalf("test history invalid: %v", err)
			}
			r := Check(h, WithTimeout(5*time.Second))
			assertChecks(t, r, tt.want)
			if tt.more != nil {
				tt.more(t, r)
			}
		})
	}
}

func TestTenures(t *testing.T) {
	var b hb
	a := b.acquire(0, 0, 1, 1, 5)                                                         // #1 released by lease
	b.release(0, a, 4)                                                                    // #2
	b.acquire(1, 2, 6, 0, 0)                                                              // #3 never released, worker acquires again
	b.acquireOutcome(1, 7, 8, history.Fail)                                               // #4 ends #3's tenure at 7
	b.acquire(1, 9, 10, 0, 0)                                                             // #5 released without lease id
	b.add(history.Op{Worker: 1, Kind: history.Release, Invoke: ms(12), Complete: ms(13)}) // #6
	b.acquire(2, 14, 15, 3, 30)                                                           // #7 open until the history's end
	b.release(0, a, 16)                                                                   // #8 second release of #1: ignored
	got := Tenures(b.h())
	want := []Tenure{
		{Worker: 0, Lease: 1, Token: 1, Start: ms(1), End: ms(4), Released: true, ValidUntil: ms(5)},
		{Worker: 1, Lease: 3, Start: ms(6), End: ms(7)},
		{Worker: 1, Lease: 5, Start: ms(10), End: ms(12), Released: true},
		{Worker: 2, Lease: 7, Token: 3, Start: ms(15), End: ms(16.5), ValidUntil: ms(30)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Tenures =\n%v\nwant\n%v", got, want)
	}
	if v := want[3].ValidEnd(); v != ms(16.5) {
		t.Errorf("ValidEnd = %v", v)
	}
}

func TestWindows(t *testing.T) {
	var b hb
	b.nemesis(history.NemesisStart, "partition", 1)
	b.nemesis(history.NemesisStart, "pause", 2)
	b.nemesis(history.NemesisEnd, "partition", 5)
	b.nemesis(history.NemesisEnd, "clock", 6) // no start: ignored
	got := Windows(b.h())
	want := []Window{
		{Name: "partition", Start: ms(1), End: ms(5.1), Healed: true, StartOp: 1, EndOp: 3},
		{Name: "pause", Start: ms(2), End: ms(6.1), StartOp: 2},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Windows = %+v\nwant %+v", got, want)
	}
}

func TestInvalidHistoryIsUnknown(t *testing.T) {
	h := history.History{Ops: []history.Op{{ID: 1, Kind: "bogus", Outcome: history.Ok, Invoke: 1, Complete: 2}}}
	r := Check(h)
	if r.HistoryError == "" {
		t.Fatal("no history error")
	}
	for name, res := range results(r) {
		if res.Verdict != Unknown {
			t.Errorf("%s = %v on an invalid history", name, res)
		}
	}
}

func TestSummarize(t *testing.T) {
	var b hb
	a := b.acquire(0, 0, 1, 1, 10)
	b.read(0, a, 2, 0)
	c := b.acquire(1, 11, 12, 2, 40)
	b.read(1, c, 13, 0)
	b.write(1, c, 14, 1, 2, history.Ok)
	b.release(1, c, 15)
	b.write(0, a, 20, 1, 1, history.Fail)
	b.release(0, a, 21)
	r := Check(b.h())
	tests := []struct {
		p          Property
		v          Verdict
		violations int
		detail     string
	}{
		{MutualExclusion, Violated, 1, "1 overlapping tenures"},
		{LeaseExclusion, Ok, 0, ""},
		{DataIntegrity, Ok, 0, ""},
		{Fencing, Ok, 0, ""},
		{Safety, Violated, 1, "1 overlapping tenures"},
		{"nonsense", Unknown, 0, "unknown property"},
	}
	for _, tt := range tests {
		t.Run(string(tt.p), func(t *testing.T) {
			s := r.Summarize(tt.p)
			if s.Verdict != tt.v || s.Violations != tt.violations || !strings.Contains(s.Detail, tt.detail) {
				t.Errorf("Summarize(%s) = %+v, want %s %d %q", tt.p, s, tt.v, tt.violations, tt.detail)
			}
		})
	}
}

func TestMaxExamples(t *testing.T) {
	var b hb
	for w := range 6 {
		a := b.acquire(w, 0, 1, uint64(w+1), 100)
		b.release(w, a, 50)
	}
	for _, n := range []int{0, 2, 100} {
		r := Check(b.h(), WithMaxExamples(n))
		if r.MutualExclusion.Count != 15 || len(r.MutualExclusion.Examples) != min(n, 15) {
			t.Errorf("max %d: count %d, %d examples", n, r.MutualExclusion.Count, len(r.MutualExclusion.Examples))
		}
	}
}

// A history porcupine cannot settle quickly: many concurrent writes and
// reads, then a read of a value nobody wrote. The checker must give up
// within its budget and say Unknown, not Ok.
func TestLinearizabilityTimeoutIsUnknown(t *testing.T) {
	var b hb
	const n = 40
	for i := range n {
		b.add(history.Op{Worker: i, Kind: history.Write, Invoke: ms(1), Complete: ms(100), Value: int64(i + 1)})
		b.add(history.Op{Worker: i, Kind: history.Read, Invoke: ms(1), Complete: ms(100), Value: int64(n - i)})
	}
	b.add(history.Op{Worker: 0, Kind: history.Read, Invoke: ms(200), Complete: ms(201), Value: 999})
	start := time.Now()
	r := Check(b.h(), WithTimeout(200*time.Millisecond))
	if r.Register.Verdict != Unknown || !strings.Contains(r.Register.Note, "timed out") {
		t.Fatalf("register = %v, want Unknown (timed out)", r.Register)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("Check took %v despite a 200ms budget per porcupine run", el)
	}
}

func TestWithoutLinearizability(t *testing.T) {
	var b hb
	b.tenure(0, 0, 1, 0)
	r := Check(b.h(), WithoutLinearizability())
	if r.Register.Verdict != Unknown || r.CriticalSections.Verdict != Unknown || r.Register.Note != "skipped" {
		t.Errorf("register %v, critical sections %v", r.Register, r.CriticalSections)
	}
	if r.MutualExclusion.Verdict != Ok || r.LostUpdates.Accepted != 1 {
		t.Errorf("the other checks did not run: %+v", r)
	}
}
