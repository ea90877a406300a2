package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// waitersCaseID is what -cases matches to select the waiting-clients case.
const waitersCaseID = "waiters"

// waitersNodes are the quorum sizes of the waiting-clients case.
var waitersNodes = []int{1, 5}

// The two kinds of lock the waiting-clients case runs.
const (
	kindMutex = "Mutex"
	kindFair  = "FairMutex"
)

// WaiterRow is one run of the waiting-clients case: W clients, each its
// own quorum.Client with its own connections and subscriptions (what W
// processes have), looping Lock → hold → Unlock on one name.
type WaiterRow struct {
	Lock    string  `json:"lock"`
	Nodes   int     `json:"nodes"`
	Waiters int     `json:"waiters"`
	Seconds float64 `json:"seconds"`
	// Handoffs counts every acquisition in the run (with one client, each
	// is that client's next one).
	Handoffs    int     `json:"handoffs"`
	PerSecond   float64 `json:"handoffs_per_sec"`
	GapP50us    float64 `json:"gap_p50_us"`
	GapP99us    float64 `json:"gap_p99_us"`
	WaitP99us   float64 `json:"wait_p99_us"`
	Commands    float64 `json:"server_commands_per_handoff"`
	ClientCPUus float64 `json:"client_cpu_us_per_handoff"`
	ServerCPUus float64 `json:"servers_cpu_us_per_handoff"`
	// Fairness is the least served client's acquisitions over the most
	// served one's.
	Fairness   float64 `json:"fairness_min_max"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	// ByCommand splits Commands by command (script-internal calls under
	// their own names, e.g. "set", "publish").
	ByCommand map[string]float64 `json:"commands_per_handoff_by_command,omitempty"`
}

// waitLocker is a Mutex or a FairMutex.
type waitLocker interface {
	Lock(ctx context.Context) (*quorum.Lease, error)
}

// waitersCase runs every lock kind × quorum size × number of clients once,
// for d each, on the first nodes of servers.
func waitersCase(ctx context.Context, o options, servers []*localredis.Server, log io.Writer) ([]WaiterRow, error) {
	var out []WaiterRow
	for _, n := range waitersNodes {
		admins := make([]*redis.Client, n)
		for i := range admins {
			admins[i] = servers[i].Client()
		}
		for _, kind := range []string{kindMutex, kindFair} {
			for _, w := range o.waiters {
				if err := ctx.Err(); err != nil {
					closeAll(admins)
					return nil, err
				}
				fmt.Fprintf(log, "waiting clients: %s, N=%d, W=%d …", kind, n, w)
				start := time.Now()
				row, err := waitersRun(ctx, servers[:n], admins, kind, w, o.waitersDur, o.hold)
				if err != nil {
					closeAll(admins)
					return nil, fmt.Errorf("waiters %s N=%d W=%d: %w", kind, n, w, err)
				}
				fmt.Fprintf(log, " %v\n", time.Since(start).Round(100*time.Millisecond))
				out = append(out, row)
			}
		}
		closeAll(admins)
	}
	return out, nil
}

func closeAll(cs []*redis.Client) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// waitersRun makes w clients, warms them up (connections, subscriptions,
// pools) with a short run of the same loop, then measures a run of d.
// The servers' counters are read through admins, connections made before
// the first read, so the reads add exactly one INFO per node to the
// difference (the first read's own).
func waitersRun(ctx context.Context, servers []*localredis.Server, admins []*redis.Client, kind string, w int, d, hold time.Duration) (WaiterRow, error) {
	name := fmt.Sprintf("waiters:%s:n%d:w%d", kind, len(servers), w)
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	locks := make([]waitLocker, w)
	for i := range w {
		cs := make([]redis.UniversalClient, len(servers))
		for j, s := range servers {
			c := redis.NewClient(localredis.ClientOptions(s.Addr()))
			cs[j] = c
			closers = append(closers, func() { _ = c.Close() })
		}
		// Fencing off, as the bench's other quorumlock rows.
		q, err := quorum.New(cs, quorum.WithFencing(false))
		if err != nil {
			return WaiterRow{}, err
		}
		closers = append(closers, func() { _ = q.Close() })
		if kind == kindFair {
			locks[i], err = q.FairMutex(name)
		} else {
			locks[i], err = q.Mutex(name)
		}
		if err != nil {
			return WaiterRow{}, err
		}
	}
	if warm := waitLoop(ctx, locks, min(max(d/5, 300*time.Millisecond), time.Second), hold); warm.firstErr != nil {
		return WaiterRow{}, fmt.Errorf("warm-up: %w", warm.firstErr)
	}
	var pids []int
	for _, s := range servers {
		pids = append(pids, s.PID())
	}
	runtime.GC()
	before, err := statsOf(admins)
	if err != nil {
		return WaiterRow{}, err
	}
	cpu0, srv0 := selfCPU(), procsCPU(pids)
	smp := waitLoop(ctx, locks, d, hold)
	cpu1, srv1 := selfCPU(), procsCPU(pids)
	after, err := statsOf(admins)
	if err != nil {
		return WaiterRow{}, err
	}
	row := WaiterRow{Lock: kind, Nodes: len(servers), Waiters: w, Seconds: smp.elapsed.Seconds(),
		Handoffs: smp.ops, Errors: smp.errs}
	if smp.firstErr != nil {
		row.FirstError = smp.firstErr.Error()
	}
	if smp.elapsed > 0 {
		row.PerSecond = float64(smp.ops) / smp.elapsed.Seconds()
	}
	if len(smp.gaps) > 0 {
		g := sortedCopy(smp.gaps)
		row.GapP50us, row.GapP99us = us(percentile(g, 0.5)), us(percentile(g, 0.99))
	}
	if len(smp.lat) > 0 {
		row.WaitP99us = us(percentile(sortedCopy(smp.lat), 0.99))
	}
	if lo, hi := slices.Min(smp.perWorker), slices.Max(smp.perWorker); hi > 0 {
		row.Fairness = float64(lo) / float64(hi)
	}
	row.Commands, row.ByCommand = commandsPerOp(before, after, int64(len(admins)), smp.ops)
	if smp.ops > 0 {
		row.ClientCPUus = us(cpu1-cpu0) / float64(smp.ops)
		row.ServerCPUus = us(srv1-srv0) / float64(smp.ops)
	}
	return row, nil
}

// statsOf sums the servers' counters (addStats) over admins.
func statsOf(admins []*redis.Client) (map[string]int64, error) {
	out := map[string]int64{}
	for _, c := range admins {
		if err := addStats(c, out); err != nil {
			return nil, fmt.Errorf("INFO commandstats: %w", err)
		}
	}
	return out, nil
}

// commandsPerOp is the commands the servers ran between two readings of
// their counters (addStats: every "<command>.calls", script-internal
// calls included), less own calls of the reading itself counted as
// "info", per op, in total and by command. Zero for no ops.
func commandsPerOp(before, after map[string]int64, own int64, ops int) (float64, map[string]float64) {
	if ops <= 0 {
		return 0, nil
	}
	by := map[string]float64{}
	var total int64
	for k, v := range after {
		cmd, ok := strings.CutSuffix(k, ".calls")
		if !ok {
			continue
		}
		n := v - before[k]
		if cmd == "info" {
			n -= own
		}
		if n <= 0 {
			continue
		}
		total += n
		by[cmd] = float64(n) / float64(ops)
	}
	return float64(total) / float64(ops), by
}

// waitLoop: every lock (one per client) in a loop of Lock → hold →
// Unlock for d (contend, nobody sitting out).
func waitLoop(ctx context.Context, locks []waitLocker, d, hold time.Duration) sample {
	fns := make([]lockFunc, len(locks))
	for i, lk := range locks {
		fns[i] = func(ctx context.Context) (unlocker, error) { return lk.Lock(ctx) }
	}
	return contend(ctx, fns, d, hold, false)
}

func findWaiters(rows []WaiterRow, kind string, n, w int) *WaiterRow {
	for i := range rows {
		if r := &rows[i]; r.Lock == kind && r.Nodes == n && r.Waiters == w {
			return r
		}
	}
	return nil
}

// waiterChecks are the herd targets on this run. They are open
// (the herd is not fixed yet): printed beside the table, kept apart from
// the bench's targets. The many-clients side is the most clients run (the
// target asks W=100; a quick run has fewer).
func waiterChecks(rows []WaiterRow) []Check {
	var out []Check
	for _, n := range waitersNodes {
		for _, kind := range []string{kindMutex, kindFair} {
			one := findWaiters(rows, kind, n, 1)
			var many *WaiterRow
			for i := range rows {
				if r := &rows[i]; r.Lock == kind && r.Nodes == n && r.Waiters > 1 && (many == nil || r.Waiters > many.Waiters) {
					many = r
				}
			}
			if one == nil || many == nil || one.Commands == 0 || one.PerSecond == 0 {
				continue
			}
			asked := ""
			if many.Waiters != 100 {
				asked = " (asked at W=100)"
			}
			x := many.Commands / one.Commands
			out = append(out, Check{Target: fmt.Sprintf("%s N=%d: server commands per hand-off at W=%d ≤ 3× W=1%s", kind, n, many.Waiters, asked),
				Measured: fmt.Sprintf("%.2f× (%.1f vs %.1f)", x, many.Commands, one.Commands), Pass: x <= 3})
			y := many.PerSecond / one.PerSecond
			out = append(out, Check{Target: fmt.Sprintf("%s N=%d: hand-offs/s at W=%d ≥ 0.8× W=1%s", kind, n, many.Waiters, asked),
				Measured: fmt.Sprintf("%.2f× (%s vs %s /s)", y, rate(many.PerSecond), rate(one.PerSecond)), Pass: y >= 0.8})
			out = append(out, Check{Target: fmt.Sprintf("%s N=%d: fairness min/max per client at W=%d ≥ 0.5 (the hand-off case's bar)", kind, n, many.Waiters),
				Measured: fmt.Sprintf("%.2f", many.Fairness), Pass: many.Fairness >= 0.5})
		}
		m, f := findWaiters(rows, kindMutex, n, 1), findWaiters(rows, kindFair, n, 1)
		if m != nil && f != nil && m.Commands > 0 {
			x := f.Commands / m.Commands
			out = append(out, Check{Target: fmt.Sprintf("N=%d: FairMutex uncontended (W=1) server commands per acquisition ≤ 2× Mutex's", n),
				Measured: fmt.Sprintf("%.2f× (%.1f vs %.1f; client CPU %.0f vs %.0f µs)", x, f.Commands, m.Commands, f.ClientCPUus, m.ClientCPUus), Pass: x <= 2})
		}
	}
	return out
}

func printWaiters(w io.Writer, hold time.Duration, rows []WaiterRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## waiting clients: W clients, each its own quorum.Client (own connections and subscriptions), Lock → hold %v → Unlock on one name, %.0f s each\n\n", hold, rows[0].Seconds)
	fmt.Fprintln(w, "Server commands: INFO commandstats summed over the nodes, commands scripts run included. CPU: this process (all W clients) and the servers. Fencing off.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| lock | N | W | hand-offs/s | ÷ W=1 | gap p50 ms | gap p99 ms | wait p99 ms | server commands per hand-off | ÷ W=1 | client CPU µs per hand-off | servers CPU µs per hand-off | fairness min/max | errors |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		rel, relCmd, fair := "—", "—", "—"
		if one := findWaiters(rows, r.Lock, r.Nodes, 1); one != nil && r.Waiters > 1 {
			if one.PerSecond > 0 {
				rel = fmt.Sprintf("%.2f", r.PerSecond/one.PerSecond)
			}
			if one.Commands > 0 {
				relCmd = fmt.Sprintf("%.1f", r.Commands/one.Commands)
			}
		}
		if r.Waiters > 1 {
			fair = fmt.Sprintf("%.2f", r.Fairness)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %.2f | %.2f | %.1f | %.1f | %s | %.0f | %.0f | %s | %d |\n",
			r.Lock, r.Nodes, r.Waiters, rate(r.PerSecond), rel, r.GapP50us/1e3, r.GapP99us/1e3, r.WaitP99us/1e3,
			r.Commands, relCmd, r.ClientCPUus, r.ServerCPUus, fair, r.Errors)
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		keys := slices.SortedFunc(maps.Keys(r.ByCommand), func(a, b string) int {
			if c := cmp.Compare(r.ByCommand[b], r.ByCommand[a]); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+" "+strconv.FormatFloat(r.ByCommand[k], 'f', 2, 64))
		}
		fmt.Fprintf(w, "commands per hand-off, %s N=%d W=%d: %s\n", r.Lock, r.Nodes, r.Waiters, strings.Join(parts, ", "))
	}
	for _, r := range rows {
		if r.FirstError != "" {
			fmt.Fprintf(w, "note: %s N=%d W=%d: %d errors, first: %s\n", r.Lock, r.Nodes, r.Waiters, r.Errors, oneLine(r.FirstError))
		}
	}
	printOpenChecks(w, waiterChecks(rows))
}

// printOpenChecks prints targets of work not done yet: informational, a
// MISS is expected and counts against nothing.
func printOpenChecks(w io.Writer, cs []Check) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Open targets (informational: the work they judge is not done yet; not among the bench's targets)\n\n| open target | measured | |\n|---|---|---|\n")
	for _, c := range cs {
		fmt.Fprintf(w, "| %s | %s | %s |\n", c.Target, c.Measured, map[bool]string{true: "met", false: "MISS"}[c.Pass])
	}
}
