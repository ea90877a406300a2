package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/quorumlock/quorumlock/jepsen-like/matrix"
	"github.com/quorumlock/quorumlock/jepsen-like/mutants"
)

const chaosSummary = "run the lock modes × fault scenarios matrix on local Redis servers, check every history, report (Markdown, JSON, HTML)"

func init() {
	register(&command{name: "chaos", summary: chaosSummary, run: runChaos})
}

// chaosProgress is where the progress display goes (stdout gets the table).
var chaosProgress io.Writer = os.Stderr

// runChaos is `quorumlock-lab chaos`. The exit status is 1 when a mode
// expected safe under a scenario showed a violation (or a cell could not
// run), 2 for bad flags.
func runChaos(ctx context.Context, args []string, out io.Writer) error {
	var o matrix.Options
	fs := flags("chaos", chaosSummary, out)
	o.Register(fs)
	runMutants := fs.Bool("mutants", false, "instead of the matrix: put each deliberate bug of jepsen-like/mutants into a copy of the library and run the cells meant to catch it (exit 1 if one survives)")
	only := fs.String("mutant", "", "with --mutants: only these mutants (comma-separated names)")
	ci := fs.Bool("ci", false, "with --mutants: only the mutants marked for CI, each in its first cell (make mutants-ci); with --mutants, --workloads keeps the mutants whose first cell runs those workloads")
	sim := fs.Bool("sim", false, "run the cells in the deterministic simulation (jepsen-like/sim: in-memory nodes, network and virtual time) instead of on redis-server processes; with --mutants, judge the mutants there; --seeds is then the seeds per cell, from --seed on (default 5; a cell stops at its first failing seed)")
	repeat := fs.Int("repeat", 1, "with --mutants --sim: judge each mutant this many times from one build, with the same seeds, and say whether every run gave the same verdict (exit 1 if not; make mutants-stable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	switch {
	case o.Duration < 0, o.Lease < 0:
		return fmt.Errorf("%w: --duration %v and --lease %v may not be negative (0 is the default)", errUsage, o.Duration, o.Lease)
	case o.Workers < 0:
		return fmt.Errorf("%w: --workers %d is negative: give at least 1, or leave it out for the default", errUsage, o.Workers)
	case o.Seeds < 1:
		return fmt.Errorf("%w: --seeds %d: give at least 1", errUsage, o.Seeds)
	case o.Parallel < 1:
		return fmt.Errorf("%w: --parallel %d: give at least 1", errUsage, o.Parallel)
	case *only != "" && !*runMutants:
		return fmt.Errorf("%w: --mutant %s needs --mutants", errUsage, *only)
	case *ci && !*runMutants:
		return fmt.Errorf("%w: --ci needs --mutants", errUsage)
	case *repeat < 1:
		return fmt.Errorf("%w: --repeat %d: give at least 1", errUsage, *repeat)
	case *repeat > 1 && !(*runMutants && *sim):
		return fmt.Errorf("%w: --repeat needs --mutants --sim (a seed replays only in the simulation)", errUsage)
	}
	// --seeds is the matrix's flag; the simulation, where a seed costs
	// little, runs 5 per cell unless told otherwise.
	seeds := &o.Seeds
	if *sim && !flagSet(fs, "seeds") {
		five := 5
		seeds = &five
	}
	if *runMutants {
		mo := mutants.Options{Seed: o.Seed, Sim: *sim, SimSeeds: *seeds, CI: *ci, Parallel: 1, Repeat: *repeat}
		if flagSet(fs, "parallel") {
			// Mutants one at a time unless told: a mutant killed by a
			// handful of violations is judged on a quiet machine.
			mo.Parallel = o.Parallel
		}
		if *only != "" {
			mo.Only = strings.Split(*only, ",")
		}
		if o.Workloads != "" {
			// Mutants whose first cell runs one of these workloads.
			mo.Workloads = strings.Split(o.Workloads, ",")
		}
		return chaosMutants(ctx, mo, out)
	}
	if *sim {
		return chaosSim(ctx, o, *seeds, out)
	}
	if o.Quick && !flagSet(fs, "parallel") {
		// Quick cells mostly wait on timers and the network: three at a
		// time gave the same verdicts as two (161 cells, 2 shared cores).
		o.Parallel = quickParallel
	}
	err := matrix.Main(ctx, o, matrix.Modes, matrix.Scenarios, out, chaosProgress)
	if errors.Is(err, matrix.ErrUsage) {
		return fmt.Errorf("%w: %s", errUsage, strings.TrimPrefix(err.Error(), matrix.ErrUsage.Error()+": "))
	}
	return err
}

// quickParallel is how many cells `chaos --quick` runs at once unless
// --parallel says otherwise.
const quickParallel = 3

// chaosMutants is `quorumlock-lab chaos --mutants`: the control and every
// selected mutant, a table on out, exit 1 when a mutant survives.
// --parallel is the number of mutants judged at once (default 1).
func chaosMutants(ctx context.Context, o mutants.Options, out io.Writer) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if o.Root, err = mutants.FindRoot(wd); err != nil {
		return err
	}
	o.Progress = chaosProgress
	outs, err := mutants.Run(ctx, o, mutants.List)
	mutants.WriteTable(out, mutants.List, outs)
	if err != nil {
		return err
	}
	var survivors, flickers []string
	for _, x := range outs {
		if x.Flickers() {
			flickers = append(flickers, x.Mutant)
		}
		if !x.Survived() && len(x.Killed) == 0 && x.Err != nil {
			survivors = append(survivors, x.Mutant+" (not judged)")
		} else if x.Survived() && !strings.HasPrefix(x.Mutant, "control") {
			survivors = append(survivors, x.Mutant)
		}
	}
	if len(survivors) > 0 {
		return fmt.Errorf("%d mutants not killed: %s", len(survivors), strings.Join(survivors, ", "))
	}
	if len(flickers) > 0 {
		return fmt.Errorf("%d mutants' verdicts differ between runs of the same seeds: %s", len(flickers), strings.Join(flickers, ", "))
	}
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
