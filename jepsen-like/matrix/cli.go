package matrix

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"io"
	"os"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/report"
)

// ErrUsage is wrapped by the errors of Main that are the caller's mistake
// (an unknown mode, a timing that does not fit).
var ErrUsage = errors.New("matrix: bad usage")

// ErrViolation is wrapped by Main's error when a cell expected safe showed
// a violation of its claim's property.
var ErrViolation = errors.New("matrix: a mode expected safe showed a violation")

// Options are the command-line options of a matrix run (`quorumlock-lab chaos`
// and the bench module's peer runner share them).
type Options struct {
	Modes, Scenarios string
	// Workloads: comma-separated workloads ("" = mutex, or every one with
	// Quick; "all" = every one).
	Workloads       string
	Duration, Lease time.Duration
	Workers         int
	Seed            int64
	Seeds           int
	UnsafeOnly      bool
	Quick           bool
	Parallel        int
	HTML, JSON, MD  string
	List            bool
}

// Register adds the options' flags to fs.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.Modes, "modes", "all", "comma-separated lock modes to run (see --list)")
	fs.StringVar(&o.Scenarios, "scenarios", "all", "comma-separated fault scenarios to run (see --list)")
	fs.StringVar(&o.Workloads, "workloads", "", "comma-separated workloads (lock kinds) to run, or all (see --list); default mutex, every workload with --quick, each in the modes and scenarios of its quick form")
	fs.DurationVar(&o.Duration, "duration", 0, "how long the workers run in each cell (default 8s, 3s with --quick)")
	fs.DurationVar(&o.Lease, "lease", 0, "the workload's lease time, also the max TTL of delayed restarts (default 2s, 1s with --quick)")
	fs.IntVar(&o.Workers, "workers", 0, "workers per cell, each with its own lock client (default 4)")
	fs.Int64Var(&o.Seed, "seed", 1, "seed of the run's random choices (work and think times, the random scenario's nemesis); each row prints the command that replays its cell")
	fs.IntVar(&o.Seeds, "seeds", 1, "run every expected-unsafe cell under this many seeds (--seed, --seed+1, …) and report in how many it reproduced (k/n); expected-safe cells run once")
	fs.BoolVar(&o.UnsafeOnly, "unsafe-only", false, "run only the cells expected unsafe (with --seeds: the k-of-n table alone)")
	fs.BoolVar(&o.Quick, "quick", false, "short cells (3 s, 1 s lease; scenarios whose strikes outlast the lease: a 250 ms lease, longer cells): the whole matrix in about 6 minutes on 2 cores")
	fs.IntVar(&o.Parallel, "parallel", 2, "cells run at once (each on its own cluster); quorumlock-lab chaos --quick: 3")
	fs.StringVar(&o.HTML, "html", "", "write the HTML report (summary grid, a timeline per cell in FILE's -timelines directory, loaded lazily) to this file")
	fs.StringVar(&o.JSON, "json", "", "write the JSON results to this file")
	fs.StringVar(&o.MD, "markdown", "", "also write the Markdown table to this file")
	fs.BoolVar(&o.List, "list", false, "list the modes and scenarios with what each cell is expected to show, and exit")
}

// Config turns the options into a run over the given modes and scenarios
// (the program's known ones; the options select among them).
func (o Options) Config(modes []Mode, scenarios []Scenario) (Config, error) {
	ms, err := SelectModes(modes, o.Modes)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	ss, err := SelectScenarios(scenarios, o.Scenarios)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	wl := o.Workloads
	if wl == "" && o.Quick {
		wl = "all"
	}
	ws, err := catalog.SelectWorkloads(wl)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	t := Full
	if o.Quick {
		t = Quick
	}
	if o.Duration > 0 {
		t.Duration = o.Duration
	}
	if o.Lease > 0 {
		t.Lease = o.Lease
	}
	if o.Workers > 0 {
		t.Workers = o.Workers
	}
	if o.Duration > 0 || o.Lease > 0 {
		// Scaled timing: the contested minimum scales with the run.
		t.MinContested = int(float64(FullMinContested) * t.Duration.Seconds() / Full.Duration.Seconds())
	}
	if err := t.Validate(); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if o.Parallel < 1 {
		return Config{}, fmt.Errorf("%w: --parallel must be at least 1, got %d", ErrUsage, o.Parallel)
	}
	if o.Seeds < 0 {
		return Config{}, fmt.Errorf("%w: --seeds must be at least 1, got %d", ErrUsage, o.Seeds)
	}
	return Config{Modes: ms, Scenarios: ss, Workloads: ws, QuickWorkloads: o.Quick, Timing: t, Seed: o.Seed, Seeds: max(o.Seeds, 1), UnsafeOnly: o.UnsafeOnly, Parallel: o.Parallel}, nil
}

// Main runs the matrix the options ask for: a progress line per cell to
// progress, the Markdown table to stdout, the files asked for. The error
// wraps ErrUsage for bad options, ErrViolation when a cell expected safe
// showed a violation, and reports cells that could not run.
func Main(ctx context.Context, o Options, modes []Mode, scenarios []Scenario, stdout, progress io.Writer) error {
	cfg, err := o.Config(modes, scenarios)
	if err != nil {
		return err
	}
	if o.List {
		if err := List(stdout, cfg.Modes, cfg.Scenarios); err != nil {
			return err
		}
		return ListWorkloads(stdout, cfg)
	}
	cells := cfg.cells()
	start := time.Now()
	fmt.Fprintf(progress, "workloads: %s\n", workloadIDs(cfg.Workloads))
	fmt.Fprintf(progress, "%d cells (%d modes × %d scenarios, where they apply), %v per cell, lease %v (paced scenarios: shorter lease, longer cells), %d workers, seed %d, %d at a time\n",
		len(cells), len(cfg.Modes), len(cfg.Scenarios), cfg.Timing.Duration, cfg.Timing.Lease, cfg.Timing.Workers, cfg.Seed, cfg.Parallel)
	if cfg.Seeds > 1 {
		unsafe := 0
		for _, c := range cells {
			if !c.Expect().Safe {
				unsafe++
			}
		}
		fmt.Fprintf(progress, "and the %d expected-unsafe cells under %d more seeds (%d to %d): %d runs\n",
			unsafe, cfg.Seeds-1, cfg.Seed+1, cfg.Seed+int64(cfg.Seeds)-1, len(cells)+unsafe*(cfg.Seeds-1))
	}
	done := 0
	width := len(fmt.Sprint(len(cells) * cfg.Seeds))
	cfg.Progress = func(p Progress) {
		if !p.Done {
			return
		}
		done++
		elapsed := time.Since(start)
		eta := time.Duration(float64(elapsed) / float64(done) * float64(p.Total-done))
		name := p.Cell.String()
		if p.Seed != cfg.Seed {
			name += fmt.Sprintf(" seed %d", p.Seed)
		}
		line := fmt.Sprintf("[%*d/%d] %-44s %5.1fs", width, done, p.Total, name, p.Elapsed.Seconds())
		if p.Err != nil {
			line += "  ERROR " + p.Err.Error()
		} else {
			r := p.Result
			line += fmt.Sprintf("  events %d  acq %d/%d  contested %d  overlaps %d  lost %d  stale %d/%d  → %s (expected %s)",
				r.FaultEvents, r.Acquisitions, r.Attempts, r.Contested, r.Violations, r.LostUpdates, r.StaleAccepted, r.StaleRejected,
				r.Verdict, safeWord(r.ExpectedSafe))
			if r.ExpectedSafe && r.Verdict == report.Refuted {
				line += "  ✗ VIOLATION"
			}
			if r.Broken != "" {
				line += "  ✗ BROKEN: " + r.Broken
			}
		}
		fmt.Fprintf(progress, "%s   [%v, ~%v left]\n", line, elapsed.Round(time.Second), eta.Round(time.Second))
	}
	out, runErr := Run(ctx, cfg)
	m := out.Matrix

	fmt.Fprintln(stdout)
	if err := m.WriteMarkdown(stdout); err != nil {
		return err
	}
	errs := []error{WriteFiles(m, o, progress)}
	fmt.Fprintf(progress, "%d cells in %v\n", len(m.Results), time.Since(start).Round(time.Second))

	if runErr != nil {
		errs = append(errs, runErr)
	}
	for _, e := range out.Errors {
		errs = append(errs, fmt.Errorf("cell did not run: %w", e))
	}
	if bad := Failures(m); len(bad) > 0 {
		var names []string
		for _, r := range bad {
			names = append(names, r.Mode+" × "+r.Scenario)
		}
		errs = append(errs, fmt.Errorf("%w: %d cells: %s", ErrViolation, len(bad), strings.Join(names, ", ")))
	}
	return errors.Join(errs...)
}

// WriteFiles writes m to the files o asks for (--markdown, --json, --html,
// the HTML's timelines beside it) and says so on progress; the
// simulation's runner writes its report with it too.
func WriteFiles(m report.Matrix, o Options, progress io.Writer) error {
	var errs []error
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{o.MD, m.WriteMarkdown}, {o.JSON, m.WriteJSON}, {o.HTML, nil}} {
		if f.name == "" {
			continue
		}
		var err error
		if f.write == nil {
			err = m.WriteHTMLFile(f.name) // timelines in files of their own, loaded lazily
		} else {
			err = writeFile(f.name, f.write)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(progress, "wrote %s\n", f.name)
	}
	return errors.Join(errs...)
}

func safeWord(safe bool) string {
	if safe {
		return "safe"
	}
	return "unsafe"
}

func writeFile(name string, f func(io.Writer) error) error {
	fh, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := f(fh); err != nil {
		_ = fh.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	return fh.Close()
}

// ListWorkloads prints the workloads and where cfg runs each.
func ListWorkloads(out io.Writer, cfg Config) error {
	fmt.Fprintln(out, "\nWorkloads (--workloads; the property each adds to exclusion):")
	for _, w := range catalog.Workloads {
		p := "exclusion, data integrity"
		if w.Property != "" {
			p += ", " + string(w.Property)
		}
		fmt.Fprintf(out, "  %-10s %s [%s]\n", w.ID, w.Summary, p)
		if w.ID != catalog.DefaultWorkload && w.Modes != nil {
			fmt.Fprintf(out, "  %-10s quick form: %s × %s", "", strings.Join(w.Modes, ","), strings.Join(w.Scenarios, ","))
			for _, c := range w.QuickCells {
				fmt.Fprintf(out, "; %s × %s", c[0], c[1])
			}
			fmt.Fprintln(out)
		}
	}
	n := len(CellsOf(cfg.Modes, cfg.Scenarios, cfg.Workloads, cfg.QuickWorkloads))
	fmt.Fprintf(out, "\nThis selection runs %d cells.\n", n)
	return nil
}

// List prints the modes, the scenarios and the expectation of every cell.
func List(out io.Writer, modes []Mode, scenarios []Scenario) error {
	fmt.Fprintln(out, "Modes:")
	for _, m := range modes {
		fmt.Fprintf(out, "  %-18s %s", m.ID, m.Summary)
		if m.QuickScenarios != nil {
			fmt.Fprintf(out, " (quick: %s)", strings.Join(m.QuickScenarios, ", "))
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out, "\nScenarios:")
	for _, s := range scenarios {
		fmt.Fprintf(out, "  %-24s %s\n", s.ID, s.Summary)
	}
	fmt.Fprintln(out, "\nExpected (safe/unsafe; - : does not apply):")
	fmt.Fprintf(out, "  %-24s", "")
	for _, m := range modes {
		fmt.Fprintf(out, " %s", m.ID)
	}
	fmt.Fprintln(out)
	for _, s := range scenarios {
		fmt.Fprintf(out, "  %-24s", s.ID)
		for _, m := range modes {
			v := "-"
			if s.Applies == nil || s.Applies(m) {
				v = safeWord(s.Expect(m).Safe)
			}
			fmt.Fprintf(out, " %-*s", len(m.ID), v)
		}
		fmt.Fprintln(out)
	}
	return nil
}

func workloadIDs(ws []catalog.Workload) string {
	if ws == nil {
		return catalog.DefaultWorkload
	}
	var ids []string
	for _, w := range ws {
		ids = append(ids, w.ID)
	}
	return strings.Join(ids, ",")
}
