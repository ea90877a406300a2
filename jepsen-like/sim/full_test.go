package sim

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Full-mode tests (make sim): long, behind environment variables so the
// default run stays within CI's budget.

func envInt(t *testing.T, k string, def int) int {
	t.Helper()
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", k, v, err)
	}
	return n
}

// TestUnsafeReproduction runs each expected-unsafe cell over SIM_REPRO
// seeds (default 100) and wants the violation in at least 99 % of them.
func TestUnsafeReproduction(t *testing.T) {
	if os.Getenv("SIM_FULL") == "" {
		t.Skip("SIM_FULL=1 (make sim)")
	}
	n := envInt(t, "SIM_REPRO", 100)
	cells := []struct{ mode, scenario string }{
		{"failover", "failover"},                 // failover without WAIT
		{"single", "crash-restart-nopersist"},    // restart without persistence
		{"redlock-3", "crash-restart-nopersist"}, // the same on a majority of three
		{"single", "client-pause"},               // client pause without fencing
		{"redlock-3", "client-pause"},            // the same on a quorum
	}
	only := os.Getenv("SIM_REPRO_CELLS") // mode/scenario,…; empty: all
	for _, uc := range cells {
		if only != "" && !slices.Contains(strings.Split(only, ","), uc.mode+"/"+uc.scenario) {
			continue
		}
		t.Run(uc.mode+"/"+uc.scenario, func(t *testing.T) {
			var k, acq, contested atomic.Int64
			var missed sync.Map
			start := time.Now()
			t.Run("seeds", func(t *testing.T) {
				for w := range 2 {
					t.Run(strconv.Itoa(w), func(t *testing.T) {
						t.Parallel()
						for s := w; s < n; s += 2 {
							c := CellRun{Mode: mode(t, uc.mode), Scenario: uc.scenario, Seed: uint64(1000 + s), Timing: Timing{Duration: 4 * time.Second}}
							v := Run(t, c)
							acq.Add(int64(v.Report.Acquires.Ok))
							contested.Add(int64(v.Report.Contested))
							if v.Reproduced() {
								k.Add(1)
							} else {
								missed.Store(c.Seed, ReplayCommand(c))
							}
						}
					})
				}
			})
			t.Logf("%s × %s: reproduced in %d of %d seeds (%d acquisitions, %d contested, wall %v)",
				uc.mode, uc.scenario, k.Load(), n, acq.Load(), contested.Load(), time.Since(start).Round(time.Second))
			missed.Range(func(s, cmd any) bool { t.Logf("not reproduced: seed %v: %v", s, cmd); return true })
			if float64(k.Load()) < 0.99*float64(n) {
				t.Errorf("reproduced in %d of %d seeds, want ≥ 99 %%", k.Load(), n)
			}
		})
	}
}

// TestThroughput measures, per mode under the random nemesis, the
// simulation's speed: simulated seconds per CPU second (per core: the
// process's CPU time, so it does not depend on GOMAXPROCS or on the other
// load of the machine) and per wall second, next to acquisitions per minute
// of wall time. Each mode runs SIM_BUDGET seconds of wall time (default
// 30), two runs at once; SIM_MODES picks the modes (comma-separated,
// default throughputModes). It asserts only that every run is clean; the
// numbers are logged.
func TestThroughput(t *testing.T) {
	if os.Getenv("SIM_FULL") == "" {
		t.Skip("SIM_FULL=1 (make sim)")
	}
	budget := time.Duration(envInt(t, "SIM_BUDGET", 30)) * time.Second
	modes := strings.Split(envOr("SIM_MODES", strings.Join(throughputModes, ",")), ",")
	type line struct {
		mode                               string
		acqMin, acqCPUMin, perCPU, perWall float64
	}
	var lines []line
	for _, m := range modes {
		t.Run(m, func(t *testing.T) {
			var acq, contested, runs atomic.Int64
			start, cpu0 := time.Now(), cpuTime()
			t.Run("runs", func(t *testing.T) {
				for w := range 2 {
					t.Run(strconv.Itoa(w), func(t *testing.T) {
						t.Parallel()
						for s := uint64(w); time.Since(start) < budget; s += 2 {
							c := CellRun{Mode: mode(t, m), Scenario: "random", Seed: 5000 + s}
							v := Run(t, c)
							if v.Bug() {
								t.Errorf("%v\nreplay: %s", v, ReplayCommand(c))
							}
							acq.Add(int64(v.Report.Acquires.Ok))
							contested.Add(int64(v.Report.Contested))
							runs.Add(1)
						}
					})
				}
			})
			wall, cpu := time.Since(start), cpuTime()-cpu0
			// Simulated seconds: the workers' run time of each run (its
			// drain after the workers stopped is not counted).
			simulated := time.Duration(runs.Load()) * DefaultTiming.Duration
			l := line{m, float64(acq.Load()) / wall.Minutes(), float64(acq.Load()) / cpu.Minutes(), simulated.Seconds() / cpu.Seconds(), simulated.Seconds() / wall.Seconds()}
			lines = append(lines, l)
			t.Logf("%s × random: %d acquisitions (%d contested) in %d runs, %v wall, %v CPU: %.0f acquisitions/min, %.0f contested/min, %.1f simulated s per CPU s, %.1f per wall s",
				m, acq.Load(), contested.Load(), runs.Load(), wall.Round(time.Second), cpu.Round(time.Second),
				l.acqMin, float64(contested.Load())/wall.Minutes(), l.perCPU, l.perWall)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "speed under the random nemesis (GOMAXPROCS %d):\n| mode | simulated s per CPU s | acquisitions per CPU min | simulated s per wall s | acquisitions per wall min |\n|---|---|---|---|---|\n", runtime.GOMAXPROCS(0))
	for _, l := range lines {
		fmt.Fprintf(&b, "| %s | %.1f× | %.0f | %.1f× | %.0f |\n", l.mode, l.perCPU, l.acqCPUMin, l.perWall, l.acqMin)
	}
	t.Log(b.String())
}

// throughputModes are TestThroughput's default modes: every mode of the
// catalog the random scenario applies to.
var throughputModes = []string{"single", "single+wait", "failover", "redlock-3", "redlock-5", "redlock-5+fencing", "multilock-3", "redlock-3+functions"}

// cpuTime is the CPU time (user + system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSoak runs redlock-5 under minority faults (every kind a majority
// lock claims to survive, on at most two of five nodes at a time) until
// SIM_SOAK acquisitions (default 1,000,000) or SIM_SOAK_BUDGET minutes of
// wall time (default 60), and wants every run clean.
func TestSoak(t *testing.T) {
	if os.Getenv("SIM_FULL") == "" {
		t.Skip("SIM_FULL=1 (make sim)")
	}
	target := int64(envInt(t, "SIM_SOAK", 1_000_000))
	budget := time.Duration(envInt(t, "SIM_SOAK_BUDGET", 60)) * time.Minute
	var acq, contested, runs atomic.Int64
	start := time.Now()
	t.Run("runs", func(t *testing.T) {
		for w := range 2 {
			t.Run(strconv.Itoa(w), func(t *testing.T) {
				t.Parallel()
				for s := uint64(w); acq.Load() < target && time.Since(start) < budget; s += 2 {
					c := CellRun{Mode: mode(t, "redlock-5"), Scenario: "minority", Seed: 9000 + s, Timing: Timing{Duration: 30 * time.Second}}
					v := Run(t, c)
					if v.Bug() {
						t.Errorf("%v\nreplay: %s", v, ReplayCommand(c))
					}
					acq.Add(int64(v.Report.Acquires.Ok))
					contested.Add(int64(v.Report.Contested))
					runs.Add(1)
				}
			})
		}
	})
	t.Logf("redlock-5 × minority: %d acquisitions (%d contested) in %d runs, %v wall", acq.Load(), contested.Load(), runs.Load(), time.Since(start).Round(time.Second))
	if acq.Load() < target {
		t.Logf("stopped by the wall budget before %d acquisitions", target)
	}
}
