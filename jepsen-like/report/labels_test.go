package report

import (
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// Faults injected together (a crash of several nodes) share one label; a
// fault that starts well after gets its own.
func TestFaultLabelsDoNotOverlap(t *testing.T) {
	clock := history.NewManualClock(1)
	rec := history.NewRecorder(clock)
	a := rec.Acquire(0)
	a.Acquired(0, 0)
	for _, n := range []string{"crash(m0)", "crash(m1)"} {
		rec.NemesisStart(n).Ok()
	}
	clock.Advance(time.Second)
	rec.NemesisStart("pause(m2)").Ok()
	clock.Advance(time.Second)
	for _, n := range []string{"crash(m0)", "crash(m1)", "pause(m2)"} {
		rec.NemesisEnd(n).Ok()
	}
	rec.Release(0, a.ID()).Ok()
	v := NewTimeline(rec.History()).view()
	if len(v.Faults) != 3 {
		t.Fatalf("%d fault bands, want 3", len(v.Faults))
	}
	var got []string
	for _, l := range v.FaultLabels {
		got = append(got, l.Text)
	}
	if len(got) != 2 || got[0] != "crash(m0), crash(m1)" || got[1] != "pause(m2)" {
		t.Errorf("labels %q, want [\"crash(m0), crash(m1)\" \"pause(m2)\"]", got)
	}
}
