package sim

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
)

// Judgement is a simulated run checked and judged as the matrix judges a
// cell on real processes.
type Judgement struct {
	CellResult
	Report checker.Report
	Result report.Row
	// Check is the wall time the checker took.
	Check time.Duration
	seed  uint64
}

// Bug reports what the matrix fails a run for: a cell expected safe that
// showed a violation, lock keys left without expiry, or a broken property
// (a lease taken over without its holder being told, lost liveness).
func (v Judgement) Bug() bool {
	return (v.Result.ExpectedSafe && v.Result.Verdict == report.Refuted) || len(v.Stray) > 0 || v.Result.Broken != ""
}

// Reproduced reports whether a cell expected unsafe showed the violation
// its claim predicts.
func (v Judgement) Reproduced() bool {
	return !v.Result.ExpectedSafe && v.Result.Verdict == report.Reproduced
}

func (v Judgement) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s × %s seed %d: %s — %s", v.Result.Mode, v.Result.Scenario, v.seed, v.Result.Verdict, v.Result.VerdictNote)
	if v.Result.Broken != "" {
		fmt.Fprintf(&b, "; broken: %s", v.Result.Broken)
	}
	if len(v.Stray) > 0 {
		fmt.Fprintf(&b, "; keys without expiry: %v", v.Stray)
	}
	fmt.Fprintf(&b, " (acquisitions %d, contested %d, faults %d, trace %v, wall %v + check %v)",
		v.Report.Acquires.Ok, v.Report.Contested, len(v.Faults), v.Trace, v.Wall.Round(time.Millisecond), v.Check.Round(time.Millisecond))
	return b.String()
}

// Scenario returns the catalog's scenario of id (its expectations).
func Scenario(id string) (catalog.Scenario, bool) {
	return catalog.FindScenario(catalog.Scenarios, id)
}

// Run simulates c in a testing/synctest bubble of t and judges it.
func Run(t *testing.T, c CellRun, opts ...checker.Option) Judgement {
	t.Helper()
	var (
		out CellResult
		err error
	)
	synctest.Test(t, func(t *testing.T) { out, err = Simulate(c) })
	if err != nil {
		t.Fatalf("sim: %s × %s seed %d: %v", c.modeName(), c.Scenario, c.Seed, err)
	}
	return Judge(c, out, opts...)
}

// Judge checks a run's history with jepsen-like/checker and judges it as
// the matrix does (catalog.Judge).
func Judge(c CellRun, out CellResult, opts ...checker.Option) Judgement {
	sc, ok := Scenario(c.Scenario)
	if !ok {
		sc = catalog.Scenario{ID: c.Scenario, Expect: func(catalog.Mode) catalog.Expectation {
			return catalog.Expectation{Claim: catalog.ClaimNoFaults, Safe: true}
		}}
	}
	start := time.Now()
	all := []checker.Option{checker.WithTimeout(5 * time.Second), checker.WithSignalGrace(c.timing().Lease / 4), checker.WithWakeupBound(catalog.WakeupBound), checker.WithStarveBound(catalog.StarveBound),
		checker.WithFairBound(catalog.FairBound(c.timing().Lease, catalog.WakeupBound))}
	if sc.LeasesHold {
		all = append(all, checker.WithClientFaults())
	}
	all = append(all, opts...)
	rep := checker.Check(out.History, all...)
	exp := sc.Expect(c.Mode)
	res := report.FromReport(c.modeName(), c.Scenario, exp.Claim, exp.Safe, rep).WithExpiry(out.Stray)
	res = catalog.Judge(c.Mode, sc, exp, res, rep)
	res = judgeInvariant(sc, exp, res, out.Invariant)
	if w, ok := catalog.FindWorkload(string(c.kind())); ok {
		res = catalog.JudgeWorkload(w, c.Mode, sc, exp, res, rep)
	}
	res = catalog.JudgePanics(res, out.Panics)
	return Judgement{CellResult: out, Report: rep, Result: res, Check: time.Since(start), seed: c.Seed}
}

// judgeInvariant adds the RedLock invariant to a run's judgement where
// lease exclusion is judged (a cell expected safe, or one whose faults
// strike clients only): a violation is a broken property, and refutes a
// cell expected safe.
func judgeInvariant(sc catalog.Scenario, exp catalog.Expectation, res report.Row, inv Invariant) report.Row {
	if !exp.Safe && !sc.LeasesHold {
		return res
	}
	res.Judged += ", redlock-invariant"
	if inv.Violations == 0 {
		return res
	}
	why := fmt.Sprintf("redlock invariant: %d of %d checks found a valid lease on too few nodes (first: %s)", inv.Violations, inv.Checks, inv.First)
	if res.Broken != "" {
		res.Broken += "; "
	}
	res.Broken += why
	if exp.Safe {
		if res.Verdict == report.Refuted {
			res.VerdictNote = why + "; " + res.VerdictNote
		} else {
			res.Verdict, res.VerdictNote = report.Refuted, why
		}
	}
	return res
}
