package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/jepsen-like/matrix"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
)

const chaosSummary = "run the lock modes × fault scenarios matrix on local Redis servers, check every history, report (Markdown, JSON, HTML)"

func init() {
	register(&command{name: "chaos", summary: chaosSummary, run: runChaos})
}

// chaosProgress is where the progress display goes (stdout gets the table).
var chaosProgress io.Writer = os.Stderr

type chaosConfig struct {
	modes, scenarios string
	duration, lease  time.Duration
	workers          int
	seed             int64
	quick            bool
	parallel         int
	html, json, md   string
	list             bool
}

func runChaos(ctx context.Context, args []string, out io.Writer) error {
	var cfg chaosConfig
	fs := flags("chaos", chaosSummary, out)
	fs.StringVar(&cfg.modes, "modes", "all", "comma-separated lock modes to run (see --list)")
	fs.StringVar(&cfg.scenarios, "scenarios", "all", "comma-separated fault scenarios to run (see --list)")
	fs.DurationVar(&cfg.duration, "duration", 0, "how long the workers run in each cell (default 8s, 3s with --quick)")
	fs.DurationVar(&cfg.lease, "lease", 0, "the workload's lease time, also the max TTL of delayed restarts (default 2s, 1s with --quick)")
	fs.IntVar(&cfg.workers, "workers", 0, "workers per cell, each with its own lock client (default 4)")
	fs.Int64Var(&cfg.seed, "seed", 1, "seed of the run's random choices (work times, the random scenario's nemesis)")
	fs.BoolVar(&cfg.quick, "quick", false, "short cells: the whole matrix in about 2–3 minutes on 2 cores")
	fs.IntVar(&cfg.parallel, "parallel", 2, "cells run at once (each on its own cluster)")
	fs.StringVar(&cfg.html, "html", "", "write the HTML report (summary, timeline per cell) to this file")
	fs.StringVar(&cfg.json, "json", "", "write the JSON results to this file")
	fs.StringVar(&cfg.md, "markdown", "", "also write the Markdown table to this file")
	fs.BoolVar(&cfg.list, "list", false, "list the modes and scenarios with what each cell is expected to show, and exit")
	if err := parse(fs, args); err != nil {
		return err
	}
	modes, err := matrix.SelectModes(matrix.Modes, cfg.modes)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	scenarios, err := matrix.SelectScenarios(matrix.Scenarios, cfg.scenarios)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if cfg.list {
		return listChaos(out, modes, scenarios)
	}
	timing := matrix.Full
	if cfg.quick {
		timing = matrix.Quick
	}
	if cfg.duration > 0 {
		timing.Duration = cfg.duration
	}
	if cfg.lease > 0 {
		timing.Lease = cfg.lease
	}
	if cfg.workers > 0 {
		timing.Workers = cfg.workers
	}
	if err := timing.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if cfg.parallel < 1 {
		return fmt.Errorf("%w: --parallel must be at least 1", errUsage)
	}
	// Refused dials during partitions and crashes are the point here, not
	// news: keep go-redis quiet.
	redis.SetLogger(quietRedis{})
	return chaos(ctx, cfg, matrix.Config{
		Modes: modes, Scenarios: scenarios, Timing: timing, Seed: cfg.seed, Parallel: cfg.parallel,
	}, out)
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func chaos(ctx context.Context, cfg chaosConfig, mc matrix.Config, out io.Writer) error {
	cells := matrix.Cells(mc.Modes, mc.Scenarios)
	start := time.Now()
	fmt.Fprintf(chaosProgress, "quorumlock chaos: %d cells (%d modes × %d scenarios that apply), %v per cell, lease %v, %d workers, seed %d, %d at a time\n",
		len(cells), len(mc.Modes), len(mc.Scenarios), mc.Timing.Duration, mc.Timing.Lease, mc.Timing.Workers, mc.Seed, mc.Parallel)
	done := 0
	mc.Progress = func(p matrix.Progress) {
		if !p.Done {
			return
		}
		done++
		elapsed := time.Since(start)
		eta := time.Duration(float64(elapsed) / float64(done) * float64(p.Total-done))
		line := fmt.Sprintf("[%*d/%d] %-44s %5.1fs", len(fmt.Sprint(p.Total)), done, p.Total, p.Cell.String(), p.Elapsed.Seconds())
		if p.Err != nil {
			line += "  ERROR " + p.Err.Error()
		} else {
			r := p.Result
			line += fmt.Sprintf("  acq %d/%d  overlaps %d  lost %d  stale %d/%d  → %s (expected %s)",
				r.Acquisitions, r.Attempts, r.Violations, r.LostUpdates, r.StaleAccepted, r.StaleRejected,
				r.Verdict, map[bool]string{true: "safe", false: "unsafe"}[r.ExpectedSafe])
			if r.ExpectedSafe && r.Verdict == report.Refuted {
				line += "  ✗ VIOLATION"
			}
		}
		fmt.Fprintf(chaosProgress, "%s   [%v, ~%v left]\n", line, elapsed.Round(time.Second), eta.Round(time.Second))
	}
	res, runErr := matrix.Run(ctx, mc)
	m := res.Matrix

	fmt.Fprintln(out)
	if err := m.WriteMarkdown(out); err != nil {
		return err
	}
	var errs []error
	write := func(name string, f func(io.Writer) error) {
		if name == "" {
			return
		}
		if err := writeFile(name, f); err != nil {
			errs = append(errs, err)
			return
		}
		fmt.Fprintf(chaosProgress, "wrote %s\n", name)
	}
	write(cfg.md, m.WriteMarkdown)
	write(cfg.json, m.WriteJSON)
	write(cfg.html, m.WriteHTML)
	fmt.Fprintf(chaosProgress, "%d cells in %v\n", len(m.Results), time.Since(start).Round(time.Second))

	if runErr != nil {
		errs = append(errs, runErr)
	}
	for _, e := range res.Errors {
		errs = append(errs, fmt.Errorf("cell did not run: %w", e))
	}
	if bad := matrix.Failures(m); len(bad) > 0 {
		var names []string
		for _, r := range bad {
			names = append(names, r.Mode+" × "+r.Scenario)
		}
		errs = append(errs, fmt.Errorf("%d cells expected safe showed violations: %s", len(bad), strings.Join(names, ", ")))
	}
	return errors.Join(errs...)
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

// listChaos prints the modes, the scenarios and the expectation of every
// cell.
func listChaos(out io.Writer, modes []matrix.Mode, scenarios []matrix.Scenario) error {
	fmt.Fprintln(out, "Modes:")
	for _, m := range modes {
		fmt.Fprintf(out, "  %-18s %s\n", m.ID, m.Summary)
	}
	fmt.Fprintln(out, "\nScenarios:")
	for _, s := range scenarios {
		fmt.Fprintf(out, "  %-24s %s\n", s.ID, s.Summary)
	}
	fmt.Fprintln(out, "\nExpected (safe/unsafe; - : does not apply):")
	fmt.Fprintf(out, "  %-24s", "")
	for _, m := range modes {
		fmt.Fprintf(out, " %-*s", len(m.ID), m.ID)
	}
	fmt.Fprintln(out)
	for _, s := range scenarios {
		fmt.Fprintf(out, "  %-24s", s.ID)
		for _, m := range modes {
			v := "-"
			if s.Applies == nil || s.Applies(m) {
				v = map[bool]string{true: "safe", false: "unsafe"}[s.Expect(m).Safe]
			}
			fmt.Fprintf(out, " %-*s", len(m.ID), v)
		}
		fmt.Fprintln(out)
	}
	return nil
}
