package checker

import (
	"testing"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

func (b *hb) signal(w int, lease history.OpID, at float64) {
	b.add(history.Op{Worker: w, Kind: history.Signal, Lease: lease, Invoke: ms(at), Complete: ms(at)})
}

// A holder that acts on past its lease while another client takes the
// lock over must have been told (Signal) within the grace; a write after
// the signal is counted apart.
func TestSignals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		signal    float64 // 0: none
		wantCount int
		wantAfter int
	}{
		{"told at the validity's end", 100, 0, 1},
		{"told a little after the takeover", 150, 0, 1},
		{"told long after the takeover", 400, 1, 1},
		{"never told", 0, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b hb
			a := b.acquire(0, 0, 1, 0, 100) // valid until 100 ms
			if tc.signal != 0 {
				b.signal(0, a, tc.signal)
			}
			b.tenure(1, 120, 0, 0) // takes over at 121 ms
			b.write(0, a, 500, 1, 0, history.Ok)
			b.release(0, a, 600)
			h := b.h()
			h.Meta = map[string]string{"signals": "done"}
			r := Check(h, WithoutLinearizability(), WithSignalGrace(ms(100)))
			if r.Signals.Count != tc.wantCount || r.WritesAfterSignal != tc.wantAfter {
				t.Errorf("missed %d (%s), writes after the signal %d; want %d, %d", r.Signals.Count, r.Signals.Verdict, r.WritesAfterSignal, tc.wantCount, tc.wantAfter)
			}
			h.Meta = nil
			if r := Check(h, WithoutLinearizability()); r.Signals.Verdict != Unknown {
				t.Errorf("without the signals label: %s, want unknown", r.Signals.Verdict)
			}
		})
	}
}

// Contested attempts: Lock calls during which another worker held a valid
// lease while a fault (not a held critical section) was in effect.
func TestContested(t *testing.T) {
	var b hb
	b.acquire(0, 0, 1, 0, 100)                // worker 0 holds [1, 100)
	b.acquireOutcome(1, 10, 20, history.Fail) // during the hold, no fault yet
	b.nemesis(history.NemesisStart, HeldSection, 30)
	b.acquireOutcome(2, 40, 50, history.Fail) // a held section is no fault
	b.nemesis(history.NemesisStart, "partition(n1)", 60)
	b.acquireOutcome(3, 55, 80, history.Fail)   // waits into the fault while held: contested
	b.acquireOutcome(2, 130, 140, history.Fail) // a fault, nobody holds
	b.acquire(1, 110, 120, 0, 125)              // fault, lease no longer valid
	b.nemesis(history.NemesisEnd, "partition(n1)", 200)
	if got := Check(b.h(), WithoutLinearizability()).Contested; got != 1 {
		t.Errorf("contested %d, want 1", got)
	}
}
