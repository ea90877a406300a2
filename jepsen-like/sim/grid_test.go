package sim

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
)

// TestGrid runs every mode × scenario of the matrix that the simulation
// plans (one seed, SIM_GRID_DURATION of virtual time, default 10 s) and
// writes the grid, in docs/chaos-matrix.md's notation, to SIM_GRID.
func TestGrid(t *testing.T) {
	out := os.Getenv("SIM_GRID")
	if out == "" {
		t.Skip("SIM_GRID=file")
	}
	d, err := time.ParseDuration(envOr("SIM_GRID_DURATION", "10s"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("| scenario |")
	for _, m := range catalog.Modes {
		b.WriteString(" " + m.ID + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(catalog.Modes)) + "\n")
	start := time.Now()
	only := os.Getenv("SIM_GRID_SCENARIOS") // comma-separated; empty: all
	for _, sc := range catalog.On(catalog.Matrix) {
		if only != "" && !slices.Contains(strings.Split(only, ","), sc.ID) {
			continue
		}
		if ok, _ := sc.RunsOn(catalog.Sim); !ok {
			fmt.Fprintf(&b, "| %s |%s\n", sc.ID, strings.Repeat(" not simulated |", len(catalog.Modes)))
			continue
		}
		fmt.Fprintf(&b, "| %s |", sc.ID)
		for _, m := range catalog.Modes {
			if sc.Applies != nil && !sc.Applies(m) {
				b.WriteString(" – |")
				continue
			}
			v := Run(t, CellRun{Mode: m, Scenario: sc.ID, Seed: *flagSeed, Timing: Timing{Duration: d}})
			t.Log(v)
			b.WriteString(" " + gridMark(v) + " |")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n(%v wall)\n", time.Since(start).Round(time.Second))
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gridMark is a cell in the notation of docs/chaos-matrix.md.
func gridMark(v Judgement) string {
	r := v.Report
	switch {
	case v.Bug():
		return "‼"
	case v.Result.ExpectedSafe && r.Contested < 10:
		return fmt.Sprintf("? %d", r.Contested)
	case v.Result.ExpectedSafe:
		return fmt.Sprintf("✓ %d", r.Contested)
	case v.Reproduced():
		return fmt.Sprintf("✗ %d/%d/%d", r.MutualExclusion.Count, r.LostUpdates.Count, r.StaleAccepted.Count)
	}
	return "○"
}
