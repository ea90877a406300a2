package main

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/internal/proc"
	"github.com/quorumlock/quorumlock/localredis"
)

// meter records allocations and CPU time around one run.
type meter struct {
	servers   []*localredis.Server
	stats     map[string]int64
	mallocs   uint64
	clientCPU time.Duration
	pids      []int
	serverCPU time.Duration
}

func measureStart(servers []*localredis.Server) meter {
	m := meter{servers: servers}
	if debugStats {
		m.stats = serverStats(servers)
	}
	for _, s := range servers {
		m.pids = append(m.pids, s.PID())
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.mallocs = ms.Mallocs
	m.clientCPU = selfCPU()
	m.serverCPU = procsCPU(m.pids)
	return m
}

func (m meter) finish(s *sample) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.mallocs = ms.Mallocs - m.mallocs
	s.clientCPU = selfCPU() - m.clientCPU
	s.serverCPU = procsCPU(m.pids) - m.serverCPU
	if m.stats != nil {
		after := serverStats(m.servers)
		s.stats = map[string]int64{}
		for k, v := range after {
			s.stats[k] = v - m.stats[k]
		}
	}
}

// debugStats (QUORUMLOCK_BENCH_STATS=1) adds the servers' INFO counters per
// op to each result: how many commands, reads and writes an op cost them.
var debugStats = os.Getenv("QUORUMLOCK_BENCH_STATS") != ""

func serverStats(servers []*localredis.Server) map[string]int64 {
	out := map[string]int64{}
	for _, srv := range servers {
		c := srv.Client()
		_ = addStats(c, out)
		_ = c.Close()
	}
	return out
}

// addStats adds one server's INFO stats and commandstats counters to out:
// "<command>.calls" and "<command>.usec" per command (commands a script
// runs included), and the totals serverStats keeps.
func addStats(c *redis.Client, out map[string]int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	info, err := c.Info(ctx, "stats", "commandstats").Result()
	cancel()
	if err != nil {
		return err
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if strings.HasPrefix(k, "cmdstat_") {
			for _, f := range strings.Split(v, ",") {
				if n, c, ok := strings.Cut(f, "="); ok && (n == "calls" || n == "usec") {
					x, _ := strconv.ParseInt(c, 10, 64)
					out[k[len("cmdstat_"):]+"."+n] += x
				}
			}
			continue
		}
		switch k {
		case "total_commands_processed", "total_reads_processed", "total_writes_processed", "total_net_input_bytes", "total_net_output_bytes", "total_connections_received":
			x, _ := strconv.ParseInt(v, 10, 64)
			out[k] += x
		}
	}
	return nil
}

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procsCPU sums the on-CPU time of the given processes' main threads
// (/proc/PID/schedstat, nanoseconds; redis-server does its work there).
func procsCPU(pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		total += time.Duration(ns)
	}
	return total
}

// CaseRow is one case × implementation, medians over rounds.
type CaseRow struct {
	Case       string `json:"case"`
	Title      string `json:"title"`
	Impl       string `json:"impl"`
	Variant    string `json:"variant"`
	Nodes      int    `json:"nodes"`
	Goroutines int    `json:"goroutines"`
	Frozen     int    `json:"frozen_nodes,omitempty"`
	// Metric names what p50/p99/max measure (e.g. "Lock+Unlock").
	Metric    string  `json:"metric"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	MaxUs     float64 `json:"max_us"`
	// AllocsPerOp is heap allocations of the whole client process per op,
	// background goroutines included.
	AllocsPerOp float64 `json:"allocs_per_op"`
	// CPU per op: this process, and the servers of the case together.
	ClientCPUusPerOp  float64 `json:"client_cpu_us_per_op"`
	ServersCPUusPerOp float64 `json:"servers_cpu_us_per_op"`
	// CPUBusy is (client + servers CPU time) / (wall time × CPUs): near 1
	// means the machine was the limit.
	CPUBusy float64 `json:"cpu_busy"`
	// Hand-off only: median gap from release call to the next acquisition,
	// and min/max acquisitions per goroutine.
	GapP50us *float64 `json:"gap_p50_us,omitempty"`
	// The gap's 90th percentile and mean: the rate is about 1 ÷ (hold +
	// mean gap), so a tail of slow hand-offs shows here, not in the median.
	GapP90us  *float64 `json:"gap_p90_us,omitempty"`
	GapMeanus *float64 `json:"gap_mean_us,omitempty"`
	Fairness  *float64 `json:"fairness_min_max,omitempty"`
	// Rounds actually run, total ops, per-round ops/s.
	Rounds      int       `json:"rounds"`
	Ops         int       `json:"ops"`
	RoundsRates []float64 `json:"rounds_ops_per_sec"`
	Errors      int       `json:"errors"`
	FirstError  string    `json:"first_error,omitempty"`
	// ServerStats (QUORUMLOCK_BENCH_STATS=1): servers' INFO counters per op.
	ServerStats map[string]float64 `json:"server_stats_per_op,omitempty"`
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func summarize(s *spec, e *entry) CaseRow {
	r := CaseRow{
		Case: s.id, Title: s.title, Impl: string(e.impl), Variant: e.variant,
		Nodes: s.nodes, Goroutines: s.goroutines, Frozen: s.frozen, Metric: s.metric,
		Rounds: len(e.samples),
	}
	var rates, p50s, p99s, gaps, gap90s, gapMeans, fair []float64
	var mallocs uint64
	var ccpu, scpu, wall time.Duration
	for _, smp := range e.samples {
		r.Ops += smp.ops
		r.Errors += smp.errs
		if smp.firstErr != nil && r.FirstError == "" {
			r.FirstError = smp.firstErr.Error()
		}
		mallocs += smp.mallocs
		ccpu += smp.clientCPU
		scpu += smp.serverCPU
		wall += smp.elapsed
		if smp.elapsed > 0 {
			rates = append(rates, float64(smp.ops)/smp.elapsed.Seconds())
		}
		lat := sortedCopy(smp.lat)
		if len(lat) > 0 {
			p50s = append(p50s, us(percentile(lat, 0.5)))
			p99s = append(p99s, us(percentile(lat, 0.99)))
			r.MaxUs = max(r.MaxUs, us(lat[len(lat)-1]))
		}
		if len(smp.gaps) > 0 {
			g := sortedCopy(smp.gaps)
			gaps = append(gaps, us(percentile(g, 0.5)))
			gap90s = append(gap90s, us(percentile(g, 0.9)))
			var sum time.Duration
			for _, d := range g {
				sum += d
			}
			gapMeans = append(gapMeans, us(sum/time.Duration(len(g))))
		}
		if len(smp.perWorker) > 0 {
			lo, hi := slices.Min(smp.perWorker), slices.Max(smp.perWorker)
			if hi > 0 {
				fair = append(fair, float64(lo)/float64(hi))
			}
		}
	}
	for _, smp := range e.samples {
		for k, v := range smp.stats {
			if r.ServerStats == nil {
				r.ServerStats = map[string]float64{}
			}
			r.ServerStats[k] += float64(v)
		}
	}
	for k := range r.ServerStats {
		r.ServerStats[k] /= float64(max(r.Ops, 1))
	}
	r.RoundsRates = rates
	r.OpsPerSec = median(rates)
	r.P50us = median(p50s)
	r.P99us = median(p99s)
	if r.Ops > 0 {
		r.AllocsPerOp = float64(mallocs) / float64(r.Ops)
		r.ClientCPUusPerOp = us(ccpu) / float64(r.Ops)
		r.ServersCPUusPerOp = us(scpu) / float64(r.Ops)
	}
	if wall > 0 {
		r.CPUBusy = (ccpu + scpu).Seconds() / (wall.Seconds() * float64(runtime.NumCPU()))
	}
	if len(gaps) > 0 {
		g, g90, gm := median(gaps), median(gap90s), median(gapMeans)
		r.GapP50us, r.GapP90us, r.GapMeanus = &g, &g90, &gm
	}
	if len(fair) > 0 {
		f := median(fair)
		r.Fairness = &f
	}
	return r
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func loadAvg() string { return proc.LoadAvg() }

func infoField(info, key string) string {
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == key {
			return v
		}
	}
	return ""
}

func commandLine() string {
	args := os.Args[1:]
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t'\"") {
			a = strconv.Quote(a)
		}
		q[i] = a
	}
	return strings.TrimSpace("cd bench && go run . " + strings.Join(q, " "))
}
