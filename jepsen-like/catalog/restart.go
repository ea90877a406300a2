package catalog

import (
	"math/rand/v2"
	"slices"

	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// restartMode is redlock-3 with restart detection at its default delay:
// the mode the crash-restart cells without persistence are expected safe
// in. The quick matrix runs it only there.
var restartMode = Mode{ID: "redlock-3+restart",
	Summary: "redlock-3 with restart detection at its default delay (the largest TTL in use): a node that restarted or is younger than that does not vote",
	Masters: 3, Majority: true, TunesDrift: true, Fencing: false, RestartDetection: RestartAlways,
	QuickScenarios: []string{"crash-restart-nopersist", "crash-restart-minority"}}

// crashRestartMinority: a renewal that reaches a node which lost the key
// while the lease is still valid. The holder keeps working two leases
// after the crash, past the restart delay, so a holder that wrongly
// counts the empty node as renewed is still inside its lease when the
// node votes again.
var crashRestartMinority = Scenario{
	ID: "crash-restart-minority",
	Summary: "leases renewed by a watchdog; while a worker holds the lock, a minority of the lock nodes is killed and restarted at once without persistence, " +
		"and the holder works two leases more: its renewals reach a node that lost the key while the lease is valid; again and again (short lease)",
	Watchdog:      true,
	ForgetsFences: true,
	Pace:          &Pace{LeaseDiv: 4, DurationMul: 2.5},
	Applies:       func(m Mode) bool { return !m.Group && m.Masters >= 3 && !m.FixedLease },
	Expect: func(m Mode) Expectation {
		switch {
		case !m.Majority:
			return safe(ClaimAllNodes, "the nodes that did not restart still hold the key and refuse; the holder's renewal fails on the restarted node and its lease ends")
		case m.RestartDetection == RestartAlways:
			return safe(report.ClaimRestartNeedsPersistence, "the restarted node sits out a TTL: a holder left with fewer than a quorum of keys fails to renew and is told long before the node votes again")
		}
		return unsafe(report.ClaimRestartNeedsPersistence, "a holder with a bare majority loses a key: the restarted node votes at once for another worker while the lease is still valid")
	},
	Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
		var out []Fault
		for _, f := range repeated(t, rng, 4, Fault{Kind: Crash, Held: true, Nodes: minorityOf(lockNodes(m)), D: 2 * t.Lease}) {
			f.Hold = 0 // restarted at once; the holder is kept D
			out = append(out, f)
		}
		return out
	},
}

// renewedQuickCells are where the quick matrix also runs the renewed
// workload: renewals that reach a node which lost the key while the lease
// is valid, after a minority crash without persistence (with restart
// detection: without it the cell is unsafe) and after a minority clock
// jump (MultiLock: a Redlock holder with a bare majority is unsafe there).
var renewedQuickCells = [][2]string{{"redlock-3+restart", "crash-restart-minority"}, {"multilock-3", "clock-jump"}}

var quickCells = map[workload.Kind][][2]string{workload.Renewed: renewedQuickCells}

// Quick reports whether the quick matrix runs m under scenario s
// (Mode.QuickScenarios).
func (m Mode) Quick(s string) bool {
	return m.QuickScenarios == nil || slices.Contains(m.QuickScenarios, s)
}
