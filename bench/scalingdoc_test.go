package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/bench/adapters"
)

// The markers around the blocks of docs/scaling.md generated from the
// committed run's scaling case.
const (
	coreBegin    = "<!-- server core: generated from " + benchRun + " by cd bench && go test -run TestScalingCaseDoc -update -->\n"
	coreEnd      = "<!-- end of the generated server core figures -->\n"
	mastersBegin = "<!-- masters: generated from " + benchRun + " by cd bench && go test -run TestScalingCaseDoc -update -->\n"
	mastersEnd   = "<!-- end of the generated masters table -->\n"
)

// scalingDoc renders the scaling case of the run as docs/scaling.md shows
// it: the table of what one server core does, and the masters needed for
// a target rate at half a core per master, from the rates per core.
func scalingDoc(f jsonFile) (core, masters string, err error) {
	type row struct {
		label, variant string
		goroutines     int
	}
	rows := []row{
		{"standalones", scaleStandalone, scaleGoroutines},
		{fmt.Sprintf("clusters of %d masters, restart detection", scaleMasters), scaleClustersRD, scaleGoroutines},
		{fmt.Sprintf("clusters of %d masters, no restart check (defaults: fsync-always)", scaleMasters), scaleClusters, scaleGoroutines},
		{"the same", scaleClustersFull, scaleMasters * scaleGoroutines},
	}
	got := make([]*CaseRow, len(rows))
	for i, r := range rows {
		if got[i] = find(f.Results, scalingCaseID, scaleNodes, r.goroutines, adapters.Quorumlock, r.variant); got[i] == nil || got[i].ServersCPUusPerOp <= 0 {
			return "", "", fmt.Errorf("the run lacks the scaling case's %q row", r.variant)
		}
	}
	e := f.Env
	var b strings.Builder
	fmt.Fprintf(&b, "The committed run (`%s`, %s) on %d vCPUs shared with other jobs, redis-server %s, load average %s at the end (the rates are bound by the loaded machine, the CPU per acquisition much less):\n\n",
		benchRun, e.Started.Format(time.DateOnly), e.CPUs, e.Redis, e.Load)
	fmt.Fprintf(&b, "| quorum of %d | goroutines | acquisitions/s | server CPU µs per acquisition | acquisitions/s per server core | client CPU µs per acquisition |\n|---|--:|--:|--:|--:|--:|\n", scaleNodes)
	for i, r := range rows {
		g := got[i]
		fmt.Fprintf(&b, "| %s | %d | %s | %.0f | %s | %.0f |\n", r.label, r.goroutines, rate(g.OpsPerSec), g.ServersCPUusPerOp, rate(perCoreRate(g)), g.ClientCPUusPerOp)
	}
	alone, clusters, rd := perCoreRate(got[0]), perCoreRate(got[2]), perCoreRate(got[1])
	fmt.Fprintf(&b, "\nAt one core per server the %d masters serve %.2f× what the %d standalones do (%d × %s against %d × %s acquisitions/s per server core).\n",
		scaleNodes*scaleMasters, float64(scaleMasters)*clusters/alone, scaleNodes, scaleNodes*scaleMasters, rate(clusters), scaleNodes, rate(alone))

	// m = ceil(rate / (r × N × 0.5)); a cluster has at least scaleMasters.
	const half = 0.5
	var t strings.Builder
	fmt.Fprintf(&t, "| target acquisitions/s | standalones (r = %s) | clusters, fsync-always (r = %s) | clusters with restart detection (r = %s) |\n|--:|---|--:|--:|\n",
		rate(alone), rate(clusters), rate(rd))
	cl := func(target, r float64) string {
		m := int(math.Ceil(target / (r * scaleNodes * half)))
		if m < scaleMasters {
			return fmt.Sprintf("%d (%d)", scaleMasters, m)
		}
		return fmt.Sprint(m)
	}
	for _, target := range []float64{1e4, 3e4, 1e5, 3e5} {
		limit := alone * scaleNodes * half
		st := "—"
		switch {
		case target <= limit/2:
			st = fmt.Sprintf("%d nodes", scaleNodes)
		case target <= limit:
			st = fmt.Sprintf("%d nodes, near their limit (%s)", scaleNodes, commas(int64(math.Round(limit/100)*100)))
		}
		fmt.Fprintf(&t, "| %s | %s | %s | %s |\n", commas(int64(target)), st, cl(target, clusters), cl(target, rd))
	}
	return b.String(), t.String(), nil
}

// What docs/scaling.md says one server core does, and the masters it
// plans for a target rate, are the committed run's scaling case: a page
// edited by hand or a run committed without its page fails here.
func TestScalingCaseDocMatchesTheCommittedRun(t *testing.T) {
	core, masters, err := scalingDoc(readRun(t))
	if err != nil {
		t.Fatalf("%s: %v", benchRun, err)
	}
	checkBlock(t, "docs/scaling.md", coreBegin, coreEnd, core, benchRun, "TestScalingCaseDoc")
	checkBlock(t, "docs/scaling.md", mastersBegin, mastersEnd, masters, benchRun, "TestScalingCaseDoc")
}
