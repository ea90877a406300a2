package catalog

import (
	"fmt"
	"strings"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// LivenessFloor is the availability (acquisitions ÷ attempts) below which
// a cell that expects progress fails: under no fault (expiry-race strikes
// locks of its own, not the workers'), or a quorum mode
// under a fault on a minority of its nodes, Lock calls should succeed
// (0.92–1.0 in the quick matrix; a lock that leaves shares behind after a
// failed attempt falls far below).
const LivenessFloor = 0.8

// ExpectsProgress reports whether a cell must keep acquiring: no fault on
// the workers' lock (baseline; expiry-race, whose races use locks of their
// own), or a majority lock with a fault on a minority of its nodes.
func ExpectsProgress(m Mode, s Scenario) bool {
	if !s.Expect(m).Safe {
		return false
	}
	switch s.ID {
	case "baseline", "expiry-race", "lost-wakeups", "herd":
		return true
	case "partition-minority", "latency", "node-pause":
		return m.Majority && m.Nodes() >= 3
	}
	return false
}

// Judge adds the properties a cell is judged on besides its claim's:
// keys left without expiry (WithExpiry); lease exclusion in every cell
// expected safe and in every cell whose faults strike clients only (no
// fault of theirs lets a lock grant two valid leases); token order in a
// fenced mode (a regression is a violation, not only a stale write the
// resource refused) under the same conditions, but where nodes restart
// without persistence (Scenario.ForgetsFences); the lease-loss signal in
// every cell whose leases signal (a lease taken over without its holder
// being told); and liveness where the cell expects progress. A property
// that fails is named in Broken (which fails the run whatever the claim
// expects) and refutes a cell expected safe. Every runner judges its
// cells with it, so a cell means the same on each.
func Judge(m Mode, s Scenario, exp Expectation, res report.Row, rep checker.Report) report.Row {
	judged := []string{res.Property, "expiry"}
	var broken []string
	fail := func(why string) {
		broken = append(broken, why)
		if !exp.Safe {
			return
		}
		if res.Verdict == report.Refuted {
			res.VerdictNote = why + "; " + res.VerdictNote
			return
		}
		res.Verdict, res.VerdictNote = report.Refuted, why
	}
	lockLevel := exp.Safe || s.LeasesHold
	if lockLevel && res.Property != string(checker.LeaseExclusion) {
		judged = append(judged, "lease-exclusion")
		if rep.LeaseExclusion.Verdict == checker.Violated {
			fail(fmt.Sprintf("lease exclusion: %d pairs of leases valid at once", rep.LeaseExclusion.Count))
		}
	}
	if m.Fencing && lockLevel && !s.ForgetsFences {
		judged = append(judged, "token-order")
		if rep.TokenOrder.Count > 0 {
			fail(fmt.Sprintf("token order: %d token regressions in a fenced mode", rep.TokenOrder.Count))
		}
	}
	if v := rep.Signals.Verdict; (v == checker.Ok || v == checker.Violated) &&
		res.Property != string(checker.LossSignal) && !m.LateLossSignal {
		judged = append(judged, "loss-signal")
		if rep.Signals.Verdict == checker.Violated {
			fail(fmt.Sprintf("loss signal: %d leases taken over while their holders were not told", rep.Signals.Count))
		}
	}
	if ExpectsProgress(m, s) {
		judged = append(judged, "liveness")
		if res.Acquisitions == 0 || res.Availability < LivenessFloor {
			fail(fmt.Sprintf("liveness: %d acquisitions in %d attempts (availability %.3f < %.1f)",
				res.Acquisitions, res.Attempts, res.Availability, LivenessFloor))
		}
	}
	res.Judged = strings.Join(judged, ", ")
	res.Broken = strings.Join(broken, "; ")
	return res
}

// JudgePanics fails a cell whose workers panicked in the library under
// test (workload.SplitPanics): the code under test crashed, a broken
// property whatever the cell expects, named in Broken with the panic's
// message and site (and refuting a cell expected safe). A panic of the
// harness is no verdict on the lock: the runner reports such a cell as
// not run.
func JudgePanics(res report.Row, panics []*workload.PanicError) report.Row {
	if len(panics) == 0 {
		return res
	}
	why := "panic: " + panics[0].Error()
	if len(panics) > 1 {
		why += fmt.Sprintf(" (and %d more)", len(panics)-1)
	}
	if res.ExpectedSafe {
		return refute(res, why, checker.Result{})
	}
	if res.Broken != "" {
		res.Broken += "; "
	}
	res.Broken += why
	return res
}
