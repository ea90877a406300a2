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

// crashRestartMinority: renewals that reach nodes which lost the key while
// the lease is valid, in a rolling restart: one minority of the lock nodes
// is killed and restarted empty, then, a quarter of a lease later, the
// next one. Each restart alone leaves the holder a quorum of keys; after
// the second only the nodes that never restarted hold its key, fewer than
// a quorum (one node of 3, one of 5). A holder that counts an empty node
// as renewed believes it still holds, and the restarted nodes vote for
// another worker once restart detection's delay has passed: the holder,
// kept 3½ leases, is still at work then. With one minority restarted, such
// a holder kept a true quorum and the matrix could not see the bug.
var crashRestartMinority = Scenario{
	ID: "crash-restart-minority",
	Summary: "leases renewed by a watchdog; while a worker holds the lock, a rolling restart without persistence: a minority of the lock nodes is killed and restarted at once, " +
		"a quarter of a lease later the next minority; the holder works 3½ leases: its renewals reach nodes that lost the key while the lease is valid; again and again (short lease)",
	Watchdog:      true,
	ForgetsFences: true,
	Pace:          &Pace{LeaseDiv: 4, DurationMul: 2.5},
	Applies:       func(m Mode) bool { return !m.Group && m.Masters >= 3 && !m.FixedLease },
	Expect: func(m Mode) Expectation {
		switch {
		case !m.Majority:
			return safe(ClaimAllNodes, "the node that never restarts still holds the key and refuses until the lease has ended; "+
				"the holder's renewal fails on the first restarted node, so its lease ends")
		case m.RestartDetection == RestartAlways:
			return safe(report.ClaimRestartNeedsPersistence, "once the second minority restarted, the holder's key is on fewer than a quorum: its renewal fails "+
				"and its lease ends before a quorum can vote for anyone else (the second restarted minority sits out a TTL from its restart, "+
				"the nodes that never restarted keep the key past the lease)")
		}
		return unsafe(report.ClaimRestartNeedsPersistence, "a restarted node votes at once: after the second minority restarted, "+
			"another worker gathers a quorum of empty nodes while the holder's lease is still valid")
	},
	Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
		n := lockNodes(m)
		nodes := allOf(2 * len(minorityOf(n)))
		var out []Fault
		for _, f := range repeated(t, rng, 4, Fault{Kind: Crash, Held: true, Nodes: nodes, D: t.Lease * 7 / 2, Roll: t.Lease / 4}) {
			f.Hold = 0 // each group restarted at once; the holder is kept D
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

var quickCells = map[workload.LockKind][][2]string{workload.Renewed: renewedQuickCells}

// Quick reports whether the quick matrix runs m under scenario s
// (Mode.QuickScenarios).
func (m Mode) Quick(s string) bool {
	return m.QuickScenarios == nil || slices.Contains(m.QuickScenarios, s)
}
