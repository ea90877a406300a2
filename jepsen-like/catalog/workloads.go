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
	Kind workload.Kind
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
		"read a counter under it, work, write the counter + 1 with their token, unlock"},
}, kindWorkloads()...)

// quickScenarios are the scenarios the quick matrix runs each lock kind's
// workload in: one without faults (the property in the open) and one
// fault that strikes what the kind adds.
var quickModes = map[workload.Kind][]string{
	workload.RW:        {"redlock-5+fencing"},
	workload.Fair:      {"redlock-3"},
	workload.Renewed:   {"redlock-3"},
	workload.All:       {"redlock-5+fencing"},
	workload.Reentrant: {"redlock-3"},
	workload.Batched:   {"redlock-3"},
}

var quickScenarios = map[workload.Kind][]string{
	workload.RW:        {"baseline", "partition-minority"},
	workload.Fair:      {"baseline", "node-pause"},
	workload.Renewed:   {"holder-isolated", "latency"},
	workload.All:       {"baseline", "partition-minority"},
	workload.Reentrant: {"baseline", "partition-minority"},
	workload.Batched:   {"baseline", "latency"},
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
// order (fair) where the cell is expected safe, signal-first (renewed)
// where it is expected safe or its faults strike clients only
// (Scenario.LeasesHold).
// A violation is named in Broken and refutes a cell expected safe.
func JudgeWorkload(w Workload, m Mode, s Scenario, exp Expectation, res report.Result, rep checker.Report) report.Result {
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
		r = rep.FairOrder
	case checker.SignalFirst:
		// Wherever the lock's own leases hold (faults that strike the
		// holder, not the nodes): a holder must hear of its loss first.
		if !exp.Safe && !s.LeasesHold {
			return res
		}
		r = rep.SignalFirst
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
	why := fmt.Sprintf("%s: %d violations", w.Property, r.Count)
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
