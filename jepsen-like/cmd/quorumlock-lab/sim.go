package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/matrix"
	"github.com/quorumlock/quorumlock/jepsen-like/mutants"
	simreport "github.com/quorumlock/quorumlock/jepsen-like/report"
)

// chaosSim is `quorumlock-lab chaos --sim`: every selected cell in the
// deterministic simulation. The simulation runs inside testing/synctest
// bubbles, which need a *testing.T, so the lab does not host it: it builds
// the jepsen-like/sim test binary (go test -c, in the repository this
// command runs in) and runs its TestCell once per cell. Exit 1 when a cell
// fails as the matrix would fail it; every failure prints its seed, the
// command that replays it and its shrunk fault list.
func chaosSim(ctx context.Context, o matrix.Options, seeds int, out io.Writer) error {
	modes, err := matrix.SelectModes(matrix.Modes, o.Modes)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	scs, err := catalog.SelectScenarios(catalog.On(catalog.Matrix), o.Scenarios)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := mutants.FindRoot(wd)
	if err != nil {
		return fmt.Errorf("chaos --sim builds jepsen-like/sim from the repository: %w", err)
	}
	dir, err := os.MkdirTemp("", "quorumlock-sim-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "sim.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "./jepsen-like/sim")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build jepsen-like/sim: %v\n%s", err, b)
	}
	duration := o.Duration
	if duration <= 0 {
		duration = 10_000_000_000 // 10 s of virtual time
	}
	// --html, --json and --markdown: each cell writes its rows and
	// histories here, merged into the matrix's report at the end.
	var reports string
	if o.HTML != "" || o.JSON != "" || o.MD != "" {
		reports = filepath.Join(dir, "report")
		if err := os.Mkdir(reports, 0o755); err != nil {
			return err
		}
	}
	var failed []string
	ran := 0
	for _, m := range modes {
		for _, sc := range scs {
			if sc.Applies != nil && !sc.Applies(m) {
				continue
			}
			if ok, why := sc.RunsOn(catalog.Sim); !ok {
				fmt.Fprintf(out, "skip %s × %s: not simulated: %s\n", m.ID, sc.ID, why)
				continue
			}
			args := []string{"-test.run", "^TestCell$", "-test.v", "-sim.mode", m.ID, "-sim.scenario", sc.ID,
				"-sim.seed", fmt.Sprint(max(o.Seed, 1)), "-sim.seeds", fmt.Sprint(seeds), "-sim.duration", duration.String()}
			if reports != "" {
				args = append(args, "-sim.report", filepath.Join(reports, fmt.Sprintf("%04d", ran)))
			}
			ran++
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = filepath.Join(root, "jepsen-like", "sim")
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Run(); err != nil {
				failed = append(failed, m.ID+" × "+sc.ID)
			}
		}
	}
	if reports != "" {
		rep, err := simreport.ReadDir(reports)
		if err != nil {
			return err
		}
		rep.Seed = max(o.Seed, 1)
		if err := matrix.WriteFiles(rep, o, out); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d simulated cells failed: %v", len(failed), failed)
	}
	return nil
}
