package checker

import (
	"slices"
	"testing"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// electionHistory: worker 0 leads term t1 from 1 ms to 500 ms; worker 1
// campaigns from 10 ms and leads term t2 from elect2 to 1000 ms (or to
// elect2 + 500 ms if later); follower 2 gets the deliveries (time, term)
// and stops at 3 s. Each term is valid for 100 ms at its election.
func electionHistory(t1, t2 uint64, elect2 float64, deliveries ...[2]float64) history.History {
	var b hb
	a := b.add(history.Op{Worker: 0, Kind: history.Acquire, Role: RoleLeader, Invoke: ms(0), Complete: ms(1), Token: t1, ValidUntil: ms(101)})
	b.release(0, a, 500)
	c := b.add(history.Op{Worker: 1, Kind: history.Acquire, Role: RoleLeader, Invoke: ms(10), Complete: ms(elect2), Token: t2, ValidUntil: ms(elect2 + 100)})
	b.release(1, c, max(1000, elect2+500))
	for _, d := range deliveries {
		b.add(history.Op{Worker: 2, Kind: history.Observe, Invoke: ms(d[0]), Complete: ms(d[0]), Token: uint64(d[1])})
	}
	b.add(history.Op{Worker: 2, Kind: history.Observe, Invoke: ms(3000), Complete: ms(3000), Outcome: history.Fail})
	return b.h()
}

func TestElection(t *testing.T) {
	seen := [][2]float64{{0.5, 0}, {2, 7}, {502, 8}}
	tests := []struct {
		name   string
		h      history.History
		broken []string // the checks violated
	}{
		{"correct", electionHistory(7, 8, 501, seen...), nil},
		{"term reused", electionHistory(7, 7, 501, [2]float64{2, 7}), []string{"one-leader", "terms-increase"}},
		{"terms decreasing", electionHistory(8, 7, 501, [2]float64{2, 8}), []string{"terms-increase"}},
		{"term seen late", electionHistory(7, 8, 501, [2]float64{0.5, 0}, [2]float64{502, 7}, [2]float64{1001, 8}), []string{"observed"}},
		{"terms out of order", electionHistory(7, 8, 501, [2]float64{2, 7}, [2]float64{502, 8}, [2]float64{600, 7}), []string{"observed"}},
		{"not replaced", electionHistory(7, 8, 2500, [2]float64{2, 7}, [2]float64{2502, 8}), []string{"replaced"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Check(tt.h, WithoutLinearizability(), WithWakeupBound(ms(370))).Election
			for name, r := range map[string]Result{"one-leader": e.OneLeader, "terms-increase": e.TermsIncrease, "observed": e.Observed, "replaced": e.Replaced} {
				want := Ok
				if slices.Contains(tt.broken, name) {
					want = Violated
				}
				if r.Verdict != want {
					t.Errorf("%s = %v, want %s", name, r, want)
				}
			}
		})
	}
	// Term 7 ends at 500 ms, valid for 100 ms at its election: the next
	// term is due by 500 + 100 + 370 ms, and later by as long as the
	// run's slowest Ok Proclaim took (a campaign publishes its first value
	// before its term begins). One elected at 1200 ms is late, in time
	// when a Proclaim took 300 ms, late again at 2500 ms.
	for _, tc := range []struct {
		elect, proclaim float64
		want            Verdict
	}{
		{1200, 0, Violated},
		{1200, 300, Ok},
		{1200, 100, Violated},
		{2500, 300, Violated},
	} {
		h := electionHistory(7, 8, tc.elect, [2]float64{2, 7}, [2]float64{tc.elect + 2, 8})
		if tc.proclaim > 0 {
			h.Ops = append(h.Ops, history.Op{ID: history.OpID(len(h.Ops) + 1), Worker: 0, Kind: history.Proclaim, Lease: 1, Token: 7, Text: "v",
				Invoke: ms(100), Complete: ms(100 + tc.proclaim), Outcome: history.Ok}, history.Op{ID: history.OpID(len(h.Ops) + 2), Worker: 0, Kind: history.Proclaim, Lease: 1, Token: 7, Text: "w",
				Invoke: ms(450), Complete: ms(1500), Outcome: history.Fail, Error: "not published"})
		}
		if r := Check(h, WithoutLinearizability(), WithWakeupBound(ms(370))).Election.Replaced; r.Verdict != tc.want {
			t.Errorf("next term at %v ms, a %v ms Proclaim: replaced = %v, want %s", tc.elect, tc.proclaim, r, tc.want)
		}
	}
	if e := Check(electionHistory(7, 8, 501, seen...), WithoutLinearizability()).Election; e.Observed.Verdict != Unknown || e.Replaced.Verdict != Unknown {
		t.Errorf("without a wakeup bound: %+v, want observed and replaced unknown", e)
	}
	var b hb
	b.tenure(0, 0, 1, 0)
	if e := Check(b.h(), WithoutLinearizability(), WithWakeupBound(ms(370))).Election; e.OneLeader.Verdict != Unknown {
		t.Errorf("a history without terms: %+v, want unknown", e)
	}
}
