package catalog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// Workload is what a cell's workers do with the lock: the lock kind they
// take and the property that kind promises. Workloads are the catalog's
// third dimension, beside modes and scenarios.
type Workload struct {
	// ID names the workload on the command line and in reports.
	ID string
	// Summary says what the workers do, in a sentence.
	Summary string
	// NotOn names the runners that cannot run the workload, with why.
	NotOn map[Runner]string
	// Kind is the workload driver (package workload) the runners start.
	Kind workload.LockKind
	// Property is what the kind promises beyond exclusion and data
	// integrity ("" when nothing more), judged in every cell that can
	// judge it (JudgeWorkload).
	Property checker.Property
	// Scenarios and Modes are where the quick matrix runs the workload
	// (nil: every one; the mutex workload's). The full matrix runs it in
	// every scenario of every quorum mode.
	Scenarios []string
	Modes     []string
	// QuickCells are further {mode, scenario} pairs the quick matrix runs
	// the workload in.
	QuickCells [][2]string
	// QuickCovered are {mode, scenario} pairs the quick matrix leaves
	// this workload out of when it runs another workload there (see
	// Covered): that workload's cell judges exclusion, the lease-level
	// properties and the claim on the same pair.
	QuickCovered [][2]string
}

// RunsOn reports whether runner r runs w, and if not, why.
func (w Workload) RunsOn(r Runner) (bool, string) {
	why, no := w.NotOn[r]
	return !no, why
}

// Workloads are the workloads, in report order. Mutex is every runner's
// default.
var Workloads = append([]Workload{
	{ID: "mutex", Kind: workload.Mutex, Summary: "workers take one Mutex with a fixed lease (or a watchdog-renewed one where the scenario says so), " +
		"read a counter under it, work, write the counter + 1 with their token, unlock",
		QuickCovered: mutexCovered},
}, kindWorkloads()...)

// mutexCovered are the pairs where the quick matrix runs a lock kind's
// workload and so not the mutex workload: every kind's workload judges
// mutual exclusion, lease exclusion, the loss signal and the scenario's
// claim as the mutex workload does (the counter too, where it writes), and
// what its kind promises besides. Pairs a mutant names with the mutex
// workload stay (redlock-3 × baseline, × holder-isolated,
// redlock-5+fencing × partition-minority): the mutants' proof is the
// quick matrix's own cells.
var mutexCovered = [][2]string{
	{"redlock-5+fencing", "baseline"},               // rw, all, guarded
	{"redlock-3", "partition-minority"},             // reentrant
	{"redlock-3", "latency"},                        // batched, renewed
	{"redlock-3", "node-pause"},                     // fair
	{"redlock-5+fencing", "client-pause"},           // guarded: the token checked by the resource and the guard
	{"multilock-3", "clock-jump"},                   // renewed
	{"redlock-3+restart", "crash-restart-minority"}, // renewed: the scenario renews every workload's leases
}

// quickScenarios are the scenarios the quick matrix runs each lock kind's
// workload in: one without faults (the property in the open) and one
// fault that strikes what the kind adds (the election: the holder cut
// off, and its leaders' proclaims under nodes killed and restarted from
// their AOF, under a partitioned minority, and under a partitioned
// majority, where a Proclaim reaches fewer nodes than a quorum).
var quickModes = map[workload.LockKind][]string{
	workload.RW:        {"redlock-5+fencing"},
	workload.Fair:      {"redlock-3"},
	workload.Renewed:   {"redlock-3"},
	workload.All:       {"redlock-5+fencing"},
	workload.Reentrant: {"redlock-3"},
	workload.Batched:   {"redlock-3"},
	workload.Election:  {"redlock-3"},
	workload.Guarded:   {"redlock-5+fencing"},
	workload.TTLs:      {"redlock-3"},
}

var quickScenarios = map[workload.LockKind][]string{
	workload.RW:        {"baseline", "partition-minority"},
	workload.Fair:      {"baseline", "node-pause"},
	workload.Renewed:   {"holder-isolated", "latency"},
	workload.All:       {"baseline", "partition-minority"},
	workload.Reentrant: {"baseline", "partition-minority"},
	workload.Batched:   {"baseline", "latency"},
	workload.Election:  {"baseline", "holder-isolated", "crash-restart-aof", "partition-minority", "partition-majority"},
	workload.Guarded:   {"baseline", "client-pause"},
	workload.TTLs:      {"baseline"},
}

func kindWorkloads() []Workload {
	var out []Workload
	for _, k := range workload.Kinds {
		if k.Kind == workload.Mutex {
			continue
		}
		out = append(out, Workload{ID: string(k.Kind), Kind: k.Kind, Summary: k.Summary, Property: k.Property,
			Scenarios: quickScenarios[k.Kind], Modes: quickModes[k.Kind], QuickCells: quickCells[k.Kind]})
	}
	return out
}

// Covered reports whether the quick matrix leaves w out of mode m ×
// scenario s because it runs another of workloads there (QuickCovered).
func (w Workload) Covered(m, s string, workloads []Workload) bool {
	if !slices.Contains(w.QuickCovered, [2]string{m, s}) {
		return false
	}
	return slices.ContainsFunc(workloads, func(o Workload) bool { return o.ID != w.ID && o.Quick(m, s) })
}

// Quick reports whether the quick matrix runs w in mode m under scenario s.
func (w Workload) Quick(m, s string) bool {
	return (w.Scenarios == nil || slices.Contains(w.Scenarios, s)) && (w.Modes == nil || slices.Contains(w.Modes, m)) ||
		slices.Contains(w.QuickCells, [2]string{m, s})
}

// SelectWorkloads returns the workloads named in a comma-separated list
// ("all": every one; "": the default workload), in the list's order.
func SelectWorkloads(list string) ([]Workload, error) {
	if list == "all" {
		return append([]Workload(nil), Workloads...), nil
	}
	if list == "" {
		list = DefaultWorkload
	}
	var out []Workload
	for _, id := range strings.Split(list, ",") {
		w, ok := FindWorkload(strings.TrimSpace(id))
		if !ok {
			var ids []string
			for _, w := range Workloads {
				ids = append(ids, w.ID)
			}
			return nil, fmt.Errorf("catalog: unknown workload %q; known: %s", id, strings.Join(ids, ", "))
		}
		out = append(out, w)
	}
	return out, nil
}

// JudgeWorkload adds to res the property w's lock kind promises beyond
// exclusion: writer progress (rw) where the cell expects progress, fair
// order (fair) and all-or-none (all) where the cell is expected safe,
// signal-first (renewed)
// where it is expected safe or its faults strike clients only
// (Scenario.LeasesHold), the election's checks (election) there too.
// A violation is named in Broken and refutes a cell expected safe.
func JudgeWorkload(w Workload, m Mode, s Scenario, exp Expectation, res report.Row, rep checker.Report) report.Row {
	var r checker.Result
	switch w.Property {
	case checker.WriterProgress:
		if !ExpectsProgress(m, s) {
			return res
		}
		r = rep.WriterProgress
	case checker.FairOrder:
		if !exp.Safe {
			return res
		}
		// Order, and a line that moves on past a dead waiter.
		r = rep.FairOrder
		if p := rep.FairProgress; p.Verdict == checker.Violated {
			res = refute(res, fmt.Sprintf("fair-progress: %d stretches without a grant past the bound", p.Count), p)
		}
	case checker.AllOrNone:
		if !exp.Safe {
			return res
		}
		r = rep.AllOrNone
	case checker.GuardOrder:
		// Wherever the guard's own promise holds: it is one node, up, and
		// no fault strikes it. A cell whose lock is refuted may hand out
		// a token twice, which the guard must accept (equal tokens are
		// one holder's repeated writes).
		if !exp.Safe {
			return res
		}
		r = rep.GuardOrder
	case checker.SignalFirst:
		// Wherever the lock's own leases hold (faults that strike the
		// holder, not the nodes): a holder must hear of its loss first.
		if !exp.Safe && !s.LeasesHold {
			return res
		}
		r = rep.SignalFirst
	case checker.ElectionTerms:
		// Where the lease exclusion is judged: the terms, the loss
		// signal, the followers and the hand-over (the last two only in
		// the fault-free spans of the run), and each term's value as a
		// register read by the followers.
		if !exp.Safe && !s.LeasesHold {
			return res
		}
		r = electionResult(rep)
	default:
		return res
	}
	if res.Judged != "" {
		res.Judged += ", "
	}
	res.Judged += string(w.Property)
	if r.Verdict != checker.Violated {
		return res
	}
	return refute(res, fmt.Sprintf("%s: %d violations", w.Property, r.Count), r)
}

// refute names a violated property in res.Broken and refutes res, why
// first in its note.
func refute(res report.Row, why string, r checker.Result) report.Row {
	if len(r.Examples) > 0 {
		why += " (" + r.Examples[0].Note + ")"
	}
	if res.Broken != "" {
		res.Broken += "; "
	}
	res.Broken += why
	if res.Verdict == report.Refuted {
		res.VerdictNote = why + "; " + res.VerdictNote
	} else {
		res.Verdict, res.VerdictNote = report.Refuted, why
	}
	return res
}

// electionResult is the election checks as one result: the violated
// ones' counts summed, their examples named.
func electionResult(rep checker.Report) checker.Result {
	out := checker.Result{Verdict: checker.Ok}
	e := rep.Election
	for _, c := range []struct {
		name string
		r    checker.Result
	}{{"one-leader", e.OneLeader}, {"terms-increase", e.TermsIncrease}, {"signal-first", rep.SignalFirst}, {"observed", e.Observed}, {"replaced", e.Replaced},
		{"values", e.Values}} {
		if c.r.Verdict != checker.Violated {
			continue
		}
		out.Verdict = checker.Violated
		out.Count += c.r.Count
		for _, x := range c.r.Examples {
			x.Note = c.name + ": " + x.Note
			out.Examples = append(out.Examples, x)
		}
	}
	return out
}

// DefaultWorkload is the workload of a cell that names none.
const DefaultWorkload = "mutex"

// FindWorkload returns the workload with the given id.
func FindWorkload(id string) (Workload, bool) {
	for _, w := range Workloads {
		if w.ID == id {
			return w, true
		}
	}
	return Workload{}, false
}
