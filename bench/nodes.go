package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/bench/adapters"
	"github.com/quorumlock/quorumlock/localredis"
)

// nodesCaseID is what -cases matches to select the quorum-size curve.
const nodesCaseID = "nodes"

// nodesCounts are the quorum sizes of the curve.
var nodesCounts = []int{1, 3, 5, 7, 9}

// NodeRow is one quorum size of the curve: Lock+Unlock on distinct names
// by 1 and by 64 goroutines, and the forced hand-off (the handoff case's
// workload), quorumlock as in the bench's other rows.
type NodeRow struct {
	Nodes int `json:"nodes"`
	// One goroutine: rate and the pair's median latency.
	OnePerSec float64 `json:"one_goroutine_ops_per_sec"`
	OneP50us  float64 `json:"one_goroutine_p50_us"`
	// 64 goroutines: rate and CPU (client + servers) per pair.
	ManyPerSec float64 `json:"many_goroutines_ops_per_sec"`
	ManyCPUus  float64 `json:"many_goroutines_cpu_us_per_op"`
	ManyBusy   float64 `json:"many_goroutines_cpu_busy"`
	// Forced hand-off.
	GapP50us   float64 `json:"handoff_gap_p50_us"`
	GapP90us   float64 `json:"handoff_gap_p90_us"`
	Fairness   float64 `json:"handoff_fairness_min_max"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
}

const nodesManyGoroutines = 64

// nodesCase starts the servers the curve needs beyond the given ones
// (stopped before it returns) and runs each quorum size's three specs.
func nodesCase(ctx context.Context, o options, servers []*localredis.Server, log io.Writer) ([]NodeRow, error) {
	need := slices.Max(nodesCounts)
	all := slices.Clone(servers)
	if len(all) < need {
		fmt.Fprintf(log, "starting %d more redis-server nodes…\n", need-len(all))
		extra, err := localredis.StartN(ctx, need-len(all), localredis.Config{})
		if err != nil {
			return nil, err
		}
		defer localredis.StopAll(extra)
		all = append(all, extra...)
	}
	nb := &bench{o: o, servers: all, log: log}
	defer nb.close()
	var out []NodeRow
	for _, n := range nodesCounts {
		ours := func() *entry { return nb.entry(n, recommended, "", adapters.Config{Kind: adapters.Quorumlock}) }
		one := &spec{id: nodesCaseID, nodes: n, goroutines: 1, metric: "Lock+Unlock",
			title: fmt.Sprintf("nodes: Lock+Unlock, N=%d, 1 goroutine", n), entries: []*entry{ours()}}
		one.lockUnlock(o.dur)
		many := &spec{id: nodesCaseID, nodes: n, goroutines: nodesManyGoroutines, metric: "Lock+Unlock",
			title: fmt.Sprintf("nodes: Lock+Unlock, N=%d, %d goroutines", n, nodesManyGoroutines), entries: []*entry{ours()}}
		many.lockUnlock(o.dur)
		ho := &spec{id: nodesCaseID, nodes: n, goroutines: handoffWorkers, metric: "Lock wait",
			title: fmt.Sprintf("nodes: forced hand-off, %d goroutines on one name, N=%d", handoffWorkers, n), entries: []*entry{ours()}}
		ho.work = handoff(o.handoff, o.hold)
		ho.warm = handoff(o.handoff/5, o.hold)
		var rs []CaseRow
		for _, s := range []*spec{one, many, ho} {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			start := time.Now()
			fmt.Fprintf(log, "%s …", s.title)
			if err := nb.runSpec(ctx, s); err != nil {
				return nil, fmt.Errorf("%s: %w", s.title, err)
			}
			fmt.Fprintf(log, " %v\n", time.Since(start).Round(100*time.Millisecond))
			rs = append(rs, summarize(s, s.entries[0]))
		}
		row := NodeRow{Nodes: n, OnePerSec: rs[0].OpsPerSec, OneP50us: rs[0].P50us,
			ManyPerSec: rs[1].OpsPerSec, ManyCPUus: rs[1].ClientCPUusPerOp + rs[1].ServersCPUusPerOp, ManyBusy: rs[1].CPUBusy,
			Errors: rs[0].Errors + rs[1].Errors + rs[2].Errors}
		for _, r := range rs {
			if row.FirstError == "" {
				row.FirstError = r.FirstError
			}
		}
		if g := rs[2]; g.GapP50us != nil {
			row.GapP50us, row.GapP90us = *g.GapP50us, *g.GapP90us
		}
		if f := rs[2].Fairness; f != nil {
			row.Fairness = *f
		}
		out = append(out, row)
	}
	return out, nil
}

// slope is the least-squares slope of y against x: what one more x adds
// to y along the curve. Zero for fewer than two distinct x.
func slope(x, y []float64) float64 {
	n := float64(min(len(x), len(y)))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range int(n) {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

func printNodes(w io.Writer, rows []NodeRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## nodes: the curve over the quorum size (quorumlock, fencing off; Lock+Unlock on distinct names; forced hand-off of %d goroutines)\n\n", handoffWorkers)
	fmt.Fprintf(w, "| N | 1 goroutine ops/s | ÷ N=1 | p50 µs | %d goroutines ops/s | ÷ N=1 | CPU µs/op client + servers | CPU busy | hand-off gap p50 µs | gap p90 µs | fairness min/max | errors |\n", nodesManyGoroutines)
	fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	base := rows[0]
	ratio := func(a, b float64) string {
		if b <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	var ns, p50, cpu, gap []float64
	for _, r := range rows {
		fmt.Fprintf(w, "| %d | %s | %s | %.0f | %s | %s | %.0f | %.0f%% | %.0f | %.0f | %.2f | %d |\n", r.Nodes,
			rate(r.OnePerSec), ratio(r.OnePerSec, base.OnePerSec), r.OneP50us,
			rate(r.ManyPerSec), ratio(r.ManyPerSec, base.ManyPerSec), r.ManyCPUus, 100*r.ManyBusy,
			r.GapP50us, r.GapP90us, r.Fairness, r.Errors)
		ns = append(ns, float64(r.Nodes))
		p50 = append(p50, r.OneP50us)
		cpu = append(cpu, r.ManyCPUus)
		gap = append(gap, r.GapP50us)
	}
	for _, r := range rows {
		if r.FirstError != "" {
			fmt.Fprintf(w, "note: N=%d: %d errors, first: %s\n", r.Nodes, r.Errors, oneLine(r.FirstError))
		}
	}
	if len(rows) > 1 {
		fmt.Fprintf(w, "\nper added node (least-squares slope over N = %s): +%.0f µs per Lock+Unlock with 1 goroutine, +%.0f µs CPU per Lock+Unlock with %d goroutines (client + servers), +%.0f µs hand-off gap p50\n",
			strings.Trim(fmt.Sprint(ns), "[]"), slope(ns, p50), slope(ns, cpu), nodesManyGoroutines, slope(ns, gap))
	}
}
