package checker

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// valueOp is one operation of a term-7 history in valuesHistory: a
// proclaim by the leader (worker 0) or a read by a follower (worker 1
// with Leader, worker 2 with Observe), over [from, to] ms.
type valueOp struct {
	kind     history.Kind
	from, to float64
	value    string
	outcome  history.Outcome // a proclaim's; reads are Ok
	term     uint64          // 0: term 7
}

// valuesHistory: worker 0 campaigns with "v1" and leads term 7 from 1 ms
// to 1000 ms; ops follow.
func valuesHistory(ops ...valueOp) history.History {
	var b hb
	a := b.add(history.Op{Worker: 0, Kind: history.Acquire, Role: RoleLeader, Invoke: ms(0), Complete: ms(1), Token: 7, ValidUntil: ms(2000), Text: "v1"})
	for _, o := range ops {
		term := o.term
		if term == 0 {
			term = 7
		}
		op := history.Op{Kind: o.kind, Invoke: ms(o.from), Complete: ms(o.to), Token: term, Text: o.value, Outcome: o.outcome}
		switch o.kind {
		case history.Proclaim:
			op.Worker, op.Lease = 0, a
			if op.Outcome == history.Unknown {
				op.Error = "quorumlock: election \"e\": value not published: 2 of 5 nodes took it, 3 needed"
			}
		case history.LeaderRead:
			op.Worker, op.Outcome = 1, history.Ok
		case history.Observe:
			op.Worker, op.Outcome = 2, history.Ok
		}
		b.add(op)
	}
	b.release(0, a, 1000)
	return b.h()
}

func proclaim(from, to float64, v string, out history.Outcome) valueOp {
	return valueOp{kind: history.Proclaim, from: from, to: to, value: v, outcome: out}
}

func leaderRead(at float64, v string) valueOp {
	return valueOp{kind: history.LeaderRead, from: at, to: at + 5, value: v}
}

func observed(from, at float64, v string) valueOp {
	return valueOp{kind: history.Observe, from: from, to: at, value: v}
}

func TestValues(t *testing.T) {
	tests := []struct {
		name string
		h    history.History
		want Verdict
		note string // in the first example, when violated
	}{
		// The reported flip: a Proclaim that reached only a minority
		// returns an error; reads then flip between the new value and
		// the old one with the majority that answers.
		{"flip after a failed proclaim", valuesHistory(proclaim(100, 110, "v2", history.Unknown),
			leaderRead(200, "v2"), leaderRead(300, "v1"), leaderRead(400, "v2")), Violated, `read → "v1"`},
		{"old value after a new one, Observe then Leader", valuesHistory(proclaim(100, 110, "v2", history.Unknown),
			observed(150, 200, "v2"), leaderRead(300, "v1")), Violated, `read → "v1"`},
		{"a value certainly not published is read", valuesHistory(proclaim(100, 110, "v2", history.Fail),
			leaderRead(200, "v2")), Violated, `read → "v2"`},
		{"old value after a published proclaim", valuesHistory(proclaim(100, 110, "v2", history.Ok),
			leaderRead(200, "v1")), Violated, `read → "v1"`},
		{"a value nobody proclaimed", valuesHistory(leaderRead(200, "v9")), Violated, `read → "v9"`},

		{"a failed proclaim that never shows", valuesHistory(proclaim(100, 110, "v2", history.Fail),
			leaderRead(200, "v1"), observed(150, 300, "v1")), Ok, ""},
		{"an unknown proclaim that shows late, once", valuesHistory(proclaim(100, 110, "v2", history.Unknown),
			leaderRead(200, "v1"), leaderRead(300, "v1"), leaderRead(400, "v2"), leaderRead(500, "v2")), Ok, ""},
		{"reads concurrent with a published proclaim", valuesHistory(proclaim(100, 110, "v2", history.Ok),
			leaderRead(98, "v1"), leaderRead(102, "v2"), leaderRead(200, "v2"), proclaim(300, 310, "v3", history.Ok), leaderRead(400, "v3")), Ok, ""},
		// Observe's read may have begun as early as its window says: the
		// old value it delivers after a Leader read saw the new one was
		// read before.
		{"an Observe delivery whose read came first", valuesHistory(proclaim(100, 110, "v2", history.Ok),
			observed(50, 300, "v1"), leaderRead(200, "v2")), Ok, ""},
		{"reads of another term apart", valuesHistory(proclaim(100, 110, "v2", history.Ok),
			leaderRead(200, "v2"), valueOp{kind: history.LeaderRead, from: 300, to: 305, value: "x", term: 9}), Ok, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(tt.h).Election.Values
			if r.Verdict != tt.want {
				t.Fatalf("values = %v, want %s", r, tt.want)
			}
			if tt.want == Violated && (len(r.Examples) == 0 || !strings.Contains(r.Examples[0].Note, tt.note) || len(r.Examples[0].Ops) == 0) {
				t.Errorf("examples %+v: want one naming %s and its op", r.Examples, tt.note)
			}
		})
	}
	if r := Check(valuesHistory(proclaim(100, 110, "v2", history.Ok))).Election.Values; r.Verdict != Unknown {
		t.Errorf("no read: values = %v, want unknown", r)
	}
	if r := Check(valuesHistory(leaderRead(200, "v9")), WithoutLinearizability()).Election.Values; r.Verdict != Unknown {
		t.Errorf("without linearizability: values = %v, want unknown (skipped)", r)
	}
}

// A real run's flip, kept as a regression input: the simulation's
// redlock-3 × partition-majority election cell on the library whose
// Leader took the value of the highest revision from any node. A
// Proclaim reached one node of three while the other two were cut off
// and returned an error; once they were back, a follower's Observe
// delivered that value (read from the one node), and every later read
// returned the value before it (read from the other two). The history
// holds the term's operations and the faults.
func TestRecordedElectionFlip(t *testing.T) {
	h, err := history.Load(filepath.Join("testdata", "election-flip-sim.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := Check(h).Election.Values
	if r.Verdict != Violated || r.Count != 1 {
		t.Fatalf("values = %v, want the term violated", r)
	}
	// The same history without the one read of the failed Proclaim's
	// value: the value that showed and went is the whole violation.
	var shown history.OpID
	for _, o := range h.Ops {
		if o.Kind == history.Observe && strings.HasSuffix(o.Text, "-8") {
			shown = o.ID
		}
	}
	if shown == 0 {
		t.Fatal("the recorded history has no read of the failed Proclaim's value")
	}
	h.Ops = slices.DeleteFunc(h.Ops, func(o history.Op) bool { return o.ID == shown })
	if r := Check(h).Election.Values; r.Verdict != Ok {
		t.Errorf("without the read of the failed value: values = %v, want ok", r)
	}
}

// A leader cut off from the nodes proclaims on, each Proclaim ending in an
// error, while followers keep reading the old value: the open Proclaims
// nobody read change no verdict and must not cost the check its time.
func TestValuesManyUnreadProclaims(t *testing.T) {
	var ops []valueOp
	for i := range 60 {
		at := 100 + 10*float64(i)
		ops = append(ops, proclaim(at, at+250, fmt.Sprintf("v%d", i+2), history.Unknown), leaderRead(at+5, "v1"))
	}
	if r := Check(valuesHistory(ops...), WithTimeout(time.Second)).Election.Values; r.Verdict != Ok {
		t.Errorf("values = %v, want ok", r)
	}
}
