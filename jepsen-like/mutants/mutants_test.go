package mutants

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
)

// Every mutant still applies to the current tree (its text occurs exactly
// once), changes something, and names cells; a mutant the code moved away
// from fails here rather than passing silently in `chaos --mutants`.
func TestEveryMutantApplies(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := copyTracked(context.Background(), root, dir); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range List {
		if names[m.Name] || m.Name == "" || m.Old == m.New || len(m.Cells) == 0 {
			t.Errorf("mutant %q: duplicate name, no change or no cells", m.Name)
		}
		names[m.Name] = true
		// Each on the tree as it is, as a run applies one at a time (two
		// may change the same line in different ways).
		p := filepath.Join(dir, filepath.FromSlash(m.File))
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Apply(dir); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(p, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A mutant whose text is not there is refused, not skipped.
	stale := Mutant{Name: "stale", File: "go.work", Old: "no such text", New: "x"}
	if err := stale.Apply(dir); err == nil || !strings.Contains(err.Error(), "occurs 0 times") {
		t.Errorf("a stale mutant applied: %v", err)
	}
	if len(List) < 9 {
		t.Errorf("%d mutants, want at least the nine of issue 13", len(List))
	}
}

// A long result keeps its start in the table: which cell killed the mutant.
func TestWriteTableKeepsTheCell(t *testing.T) {
	var b strings.Builder
	long := "single × expiry-race: 10 lock keys left without expiry (" + strings.Repeat("n0:quorumlock:{race-0}, ", 20) + ")"
	WriteTable(&b, []Mutant{{Name: "m", Bug: "a bug"}}, []Trial{{Mutant: "m", Killed: []string{long}}})
	row := ""
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "| m |") {
			row = l
		}
	}
	if !strings.Contains(row, "killed: single × expiry-race: 10 lock keys") || !strings.Contains(row, "…") {
		t.Fatalf("row %q: want the cell first and the rest cut", row)
	}
	if !strings.Contains(b.String(), "score: 1 of 1 mutants killed") {
		t.Fatalf("table:\n%s", b.String())
	}
}

// make mutants-ci runs the CI-marked mutants in their first cell alone,
// and covers every lock kind's workload.
func TestCIForm(t *testing.T) {
	ci := ciForm(List)
	kinds := map[string]bool{}
	for _, m := range ci {
		if !m.CI || len(m.Cells) != 1 {
			t.Errorf("%s: CI %v with %d cells, want a marked mutant with its first cell", m.Name, m.CI, len(m.Cells))
		}
		kinds[m.Cells[0].workload()] = true
	}
	for _, k := range []string{"mutex", "rw", "fair", "renewed", "all", "reentrant", "batched"} {
		if !kinds[k] {
			t.Errorf("no CI mutant runs the %s workload", k)
		}
	}
	if n := len(ciForm([]Mutant{{Name: "x", Cells: []CellID{{"single", "baseline", ""}}}})); n != 0 {
		t.Errorf("ciForm kept %d unmarked mutants", n)
	}
}

// Every cell a mutant names is a cell of the quick matrix (the whole of
// it: every workload), so the matrix CI and users run is the one the
// mutants prove has teeth.
func TestCellsInQuickMatrix(t *testing.T) {
	for _, m := range List {
		for _, c := range m.Cells {
			mode, ok := catalog.FindMode(catalog.Modes, c.Mode)
			w, wok := catalog.FindWorkload(c.workload())
			s, sok := catalog.FindScenario(catalog.Scenarios, c.Scenario)
			if !ok || !wok || !sok {
				t.Errorf("mutant %s: cell %v names no mode, workload or scenario", m.Name, c)
				continue
			}
			if !mode.Quick(c.Scenario) || !w.Quick(c.Mode, c.Scenario) || w.Covered(c.Mode, c.Scenario, catalog.Workloads) ||
				s.Applies != nil && !s.Applies(mode) {
				t.Errorf("mutant %s: cell %v is not in the quick matrix", m.Name, c)
			}
		}
	}
}

// A cell that crashed before writing its result kills the mutant when
// the panicking goroutine was in the library (a goroutine of its own,
// which no worker can recover); a crash of the harness leaves the cell
// unjudged.
func TestCrashedCell(t *testing.T) {
	library := `quorumlock chaos: running 1 cell
panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x8b6f2a]

goroutine 412 [running]:
github.com/quorumlock/quorumlock/quorum.(*Election).observe(0xc000120000, {0xb1c2a8, 0xc0001a6000})
	quorum/election.go:401 +0x2a
created by github.com/quorumlock/quorumlock/quorum.(*Election).Observe in goroutine 7
	quorum/election.go:366 +0x1c5
`
	harness := `panic: planted [recovered]
	panic: planted

goroutine 7 [running]:
testing.tRunner.func1()
	testing/testing.go:1737 +0x35e
panic({0x9e7a40?, 0xc0000b2010?})
	runtime/panic.go:783 +0x132
github.com/quorumlock/quorumlock/jepsen-like/sim.Simulate(0xc0)
	jepsen-like/sim/run.go:200 +0x1
`
	dir := t.TempDir()
	js := filepath.Join(dir, "cell.json")
	run := func(out string) (string, error) {
		f := filepath.Join(dir, "out.txt")
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return judgeCell(exec.Command("sh", "-c", "cat "+f+"; exit 2"), dir, js)
	}
	killed, err := run(library)
	if err != nil || killed != "panic: runtime error: invalid memory address or nil pointer dereference (in github.com/quorumlock/quorumlock/quorum.(*Election).observe)" {
		t.Errorf("a library panic: killed %q, err %v; want killed, naming the panic", killed, err)
	}
	if killed, err := run(harness); err == nil || killed != "" {
		t.Errorf("a harness panic: killed %q, err %v; want not judged", killed, err)
	}
}

// A repeated judgement says whether its runs agree: a mutant killed in
// some runs and not others flickers (and the table says so); runs that
// all kill, or all pass, agree, and the table counts the word-for-word
// equal ones (same cell, kill rate and trace hash).
func TestRepeatedVerdicts(t *testing.T) {
	kill := "c: killed in 2 of 5 seeds; seed 3, trace 00000000000000aa: x"
	steady := Trial{Mutant: "steady", Killed: []string{"[sim cell 1s] " + kill}, Runs: []string{kill, kill, kill}}
	moved := Trial{Mutant: "moved", Killed: []string{kill}, Runs: []string{kill, "c: killed in 3 of 5 seeds; seed 1, trace 00000000000000bb: x"}}
	flicker := Trial{Mutant: "flicker", Killed: []string{kill}, Runs: []string{kill, passedRun, kill}}
	passes := Trial{Mutant: "passes", Runs: []string{passedRun, passedRun}}
	for _, c := range []struct {
		o     Trial
		flick bool
		says  string
	}{
		{steady, false, "same verdict in 3 of 3 runs (killed in 3); the same kill rate and trace hash in 3 of 3"},
		{moved, false, "same verdict in 2 of 2 runs (killed in 2); the same kill rate and trace hash in 1 of 2"},
		{flicker, true, "VERDICT FLICKERS: killed in 2 of 3 runs"},
		{passes, false, "same verdict in 2 of 2 runs (passed every cell in each)"},
	} {
		if c.o.Flickers() != c.flick || !strings.Contains(c.o.stability(), c.says) {
			t.Errorf("%s: flickers %v, says %q; want %v, %q", c.o.Mutant, c.o.Flickers(), c.o.stability(), c.flick, c.says)
		}
	}
	if got := runVerdict(steady); got != kill {
		t.Errorf("runVerdict keeps the wall time: %q", got)
	}
	var b strings.Builder
	WriteTable(&b, nil, []Trial{flicker})
	if !strings.Contains(b.String(), "VERDICT FLICKERS") {
		t.Errorf("table:\n%s", b.String())
	}
}
