// Command bench runs quorumlock side by side with its peers —
// go-redsync/redsync, bsm/redislock and a raw SET NX floor — on redis-server
// nodes it starts itself, and prints medians with ratios.
//
//	cd bench && go run .                 # every case, 5 rounds (a few minutes)
//	cd bench && go run . -quick          # fewer rounds, shorter runs (~1–2 min)
//	cd bench && go run . -json out.json  # also write the results as JSON
//
// Every case runs every implementation interleaved (A B C A B C …, the order
// rotated each round), so drift of a shared machine hits all alike; the
// table shows medians over rounds. Ratios from one run are what to compare:
// absolute numbers depend on the machine, and with 5 servers and the client
// on 2 cores, N > 1 is CPU-bound (the table shows the CPU split).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

type options struct {
	rounds    int
	dur       time.Duration
	handoff   time.Duration
	hold      time.Duration
	quick     bool
	filter    *regexp.Regexp
	impls     *regexp.Regexp
	memprof   string
	jsonPath  string
	report    string // -report: print an earlier run's JSON and exit
	cpuprof   string
	slowPeers int // rounds for peers that take seconds per operation
	curve     string
	electRuns int // runs per row of the election case
	// The waiting-clients case: numbers of clients, run time of each row.
	waiters    []int
	waitersDur time.Duration
	// The many-names case: numbers of names, and the quorumlock command
	// it lists them with ("" builds it).
	names []int
	cli   string
}

func main() {
	if impl := os.Getenv(electChildEnv); impl != "" {
		// A leader process of the election case (election.go).
		if err := electChild(impl); err != nil {
			fmt.Fprintln(os.Stderr, "bench: election child:", err)
		}
		os.Exit(1)
	}
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var filter, impls string
	fs.BoolVar(&o.quick, "quick", false, "fewer rounds and shorter runs (about 1–2 minutes)")
	fs.IntVar(&o.rounds, "rounds", 0, "rounds per case (default 7, 3 with -quick)")
	fs.DurationVar(&o.dur, "dur", 0, "run time of one implementation in one round of a throughput case (default 500ms, 200ms with -quick)")
	fs.DurationVar(&o.handoff, "handoff", 0, "run time of one implementation in one round of the hand-off case (default 1s, 400ms with -quick)")
	fs.DurationVar(&o.hold, "hold", time.Millisecond, "how long a holder keeps the lock in the hand-off case (0: release at once)")
	fs.StringVar(&filter, "cases", "", "run only cases whose id and title match this regexp (ids: uncontended, handoff, frozen-2of5, frozen-3of5-trylock, frozen-3of5-lock, fencing, defaults-n1, defaults-n5, functions, memory, scaling; only when named: election, waiters, nodes, names; titles as printed, e.g. \"uncontended.*N=5, 16\")")
	fs.StringVar(&impls, "impls", "", "run only implementations whose label (e.g. \"quorumlock\", \"redsync retry-5ms\") matches this regexp")
	fs.StringVar(&o.memprof, "memprofile", "", "write an allocation profile of the whole run to this file")
	fs.StringVar(&o.jsonPath, "json", "", "write the results to this file as JSON")
	fs.StringVar(&o.cpuprof, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&o.curve, "curve", "", "also run the goroutine curve (1, 4, 16, 64, 256 goroutines; N=1, 3, 5) and draw it, with the hand-off gaps, to this PNG file")
	fs.IntVar(&o.electRuns, "elect-runs", 0, "runs per row of the election hand-off case (default 5, 3 with -quick; the resign row runs 4× as many)")
	fs.StringVar(&o.report, "report", "", "print the report of an earlier run from its -json file, its targets judged by this code, and exit (runs nothing)")
	fs.IntVar(&o.slowPeers, "slow-rounds", 0, "rounds for peers that take seconds per operation with frozen nodes (default 2, 1 with -quick)")
	var waiters string
	fs.StringVar(&waiters, "waiters", "", "numbers of clients of the waiting-clients case, comma-separated (default 1,10,100; 1,10 with -quick)")
	var names string
	fs.StringVar(&names, "names", "", "numbers of names of the many-names case, comma-separated, increasing (default 1000,10000,100000; the full form adds 1000000)")
	fs.StringVar(&o.cli, "cli", "", "the quorumlock command the names case lists with (default: go build it from this workspace)")
	fs.DurationVar(&o.waitersDur, "waiters-dur", 0, "run time of one row of the waiting-clients case (default 4s, 2s with -quick)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.report != "" {
		return reprint(stdout, o)
	}
	if o.quick {
		o.rounds = or(o.rounds, 3)
		o.dur = or(o.dur, 200*time.Millisecond)
		o.handoff = or(o.handoff, 400*time.Millisecond)
		o.slowPeers = or(o.slowPeers, 1)
		o.electRuns = or(o.electRuns, 3)
		o.waitersDur = or(o.waitersDur, 2*time.Second)
		waiters = or(waiters, "1,10")
	}
	o.waitersDur = or(o.waitersDur, 4*time.Second)
	var err error
	if o.waiters, err = parseCounts(or(waiters, "1,10,100")); err != nil {
		return fmt.Errorf("-waiters: %w", err)
	}
	if o.names, err = parseCounts(or(names, "1000,10000,100000")); err != nil {
		return fmt.Errorf("-names: %w", err)
	}
	if !slices.IsSorted(o.names) {
		return fmt.Errorf("-names: %q is not increasing", names)
	}
	o.electRuns = or(o.electRuns, 5)
	o.rounds = or(o.rounds, 7)
	o.dur = or(o.dur, 500*time.Millisecond)
	o.handoff = or(o.handoff, time.Second)
	o.slowPeers = or(o.slowPeers, 2)
	if o.rounds < 1 || o.dur <= 0 || o.handoff <= 0 || o.slowPeers < 1 || o.hold < 0 || o.waitersDur <= 0 {
		return fmt.Errorf("-rounds, -dur, -handoff, -slow-rounds and -waiters-dur must be positive, -hold not negative")
	}
	if filter != "" {
		re, err := regexp.Compile(filter)
		if err != nil {
			return fmt.Errorf("-cases: %w", err)
		}
		o.filter = re
	}
	if impls != "" {
		re, err := regexp.Compile(impls)
		if err != nil {
			return fmt.Errorf("-impls: %w", err)
		}
		o.impls = re
	}
	if o.memprof != "" {
		runtime.MemProfileRate = 512
		defer func() {
			if f, err := os.Create(o.memprof); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				_ = f.Close()
			}
		}()
	}
	if o.cpuprof != "" {
		f, err := os.Create(o.cpuprof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	// Frozen nodes make go-redis log every failed dial; the table says
	// what happened.
	redis.SetLogger(quietLogger{})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	fmt.Fprintf(stderr, "starting 5 redis-server nodes…\n")
	servers, err := localredis.StartN(ctx, 5, localredis.Config{})
	if err != nil {
		return err
	}
	// Resume before stopping: a paused server must not outlive an
	// interrupted run in that state (Stop kills it either way).
	defer func() {
		for _, s := range servers {
			if s.Paused() {
				_ = s.Resume()
			}
		}
		localredis.StopAll(servers)
	}()

	b := &bench{o: o, servers: servers, log: stderr}
	defer b.close()
	res, err := b.all(ctx)
	if err != nil {
		return err
	}
	if o.filter == nil || o.filter.MatchString(scalingCaseID) {
		sc, err := scalingCase(ctx, o, stderr)
		if err != nil {
			return fmt.Errorf("scaling: %w", err)
		}
		res = append(res, sc...)
	}
	var mem []MemRow
	if o.filter == nil || o.filter.MatchString(memoryCaseID) {
		if mem, err = memoryCase(ctx, servers[0]); err != nil {
			return err
		}
	}
	var waitRows []WaiterRow
	if o.filter != nil && o.filter.MatchString(waitersCaseID) {
		if waitRows, err = waitersCase(ctx, o, servers, stderr); err != nil {
			return err
		}
	}
	var nodeRows []NodeRow
	if o.filter != nil && o.filter.MatchString(nodesCaseID) {
		if nodeRows, err = nodesCase(ctx, o, servers, stderr); err != nil {
			return fmt.Errorf("nodes: %w", err)
		}
	}
	var nameRows []NamesRow
	if o.filter != nil && o.filter.MatchString(namesCaseID) {
		if nameRows, err = namesCase(ctx, o.names, o.cli, stderr); err != nil {
			return fmt.Errorf("names: %w", err)
		}
	}
	var elect []ElectRow
	if o.filter != nil && o.filter.MatchString(electionCaseID) {
		// Only when asked for: it takes about a minute of mostly waiting.
		if elect, err = electionCase(ctx, servers, o.electRuns, stderr); err != nil {
			return err
		}
	}
	env := environment(began, servers)
	if len(res) > 0 || len(elect) == 0 && len(waitRows) == 0 && len(nodeRows) == 0 && len(nameRows) == 0 {
		printReport(stdout, env, o, res)
	}
	printMemory(stdout, mem)
	printElection(stdout, elect)
	printWaiters(stdout, o.hold, waitRows)
	printNodes(stdout, nodeRows)
	printNames(stdout, nameRows)
	if o.curve != "" {
		if err := drawCurve(o.curve, res); err != nil {
			return fmt.Errorf("-curve: %w", err)
		}
		fmt.Fprintf(stderr, "wrote %s\n", o.curve)
	}
	printMemoryChecks(stdout, mem)
	if o.jsonPath != "" {
		if err := writeJSON(o.jsonPath, env, o, res, mem, waitRows, nodeRows, nameRows); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", o.jsonPath)
	}
	return nil
}

func printMemoryChecks(w io.Writer, mem []MemRow) { printChecks(w, memoryChecks(mem)) }

// printChecks prints targets as a table (nothing for none).
func printChecks(w io.Writer, cs []Check) {
	if len(cs) > 0 {
		fmt.Fprintf(w, "\n| target | measured | |\n|---|---|---|\n")
		for _, c := range cs {
			fmt.Fprintf(w, "| %s | %s | %s |\n", c.Target, c.Measured, map[bool]string{true: "ok", false: "MISS"}[c.Pass])
		}
	}
}

// reprint is -report: an earlier run's tables and targets from its JSON
// file, the targets judged again by this code (a target added or changed
// since is judged on the old run's numbers).
func reprint(w io.Writer, o options) error {
	data, err := os.ReadFile(o.report)
	if err != nil {
		return fmt.Errorf("-report: %w", err)
	}
	var f jsonFile
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("-report: %s: %w", o.report, err)
	}
	if len(f.Results) == 0 && len(f.Memory) == 0 && len(f.Waiters) == 0 && len(f.Nodes) == 0 && len(f.Names) == 0 {
		return fmt.Errorf("-report: %s holds no results", o.report)
	}
	o.rounds = f.Rounds
	if len(f.Results) > 0 || len(f.Waiters) == 0 && len(f.Nodes) == 0 && len(f.Names) == 0 {
		printReport(w, f.Env, o, f.Results)
	}
	printMemory(w, f.Memory)
	printWaiters(w, f.Hold, f.Waiters)
	printNodes(w, f.Nodes)
	printNames(w, f.Names)
	printMemoryChecks(w, f.Memory)
	return nil
}

// parseCounts parses a comma-separated list of positive integers.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Env describes the machine and the run.
type Env struct {
	Started   time.Time `json:"started"`
	Duration  string    `json:"duration"`
	GoVersion string    `json:"go_version"`
	OS        string    `json:"os"`
	CPUs      int       `json:"cpus"`
	CPUModel  string    `json:"cpu_model,omitempty"`
	Redis     string    `json:"redis_version,omitempty"`
	Load      string    `json:"load_average_at_end,omitempty"`
	Command   string    `json:"command"`
}

func environment(began time.Time, servers []*localredis.Server) Env {
	e := Env{
		Started:   began.UTC().Truncate(time.Second),
		Duration:  time.Since(began).Round(time.Second).String(),
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		CPUs:      runtime.NumCPU(),
		CPUModel:  cpuModel(),
		Load:      loadAvg(),
		Command:   commandLine(),
	}
	if len(servers) > 0 {
		c := servers[0].Client()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if s, err := c.Info(ctx, "server").Result(); err == nil {
			e.Redis = infoField(s, "redis_version")
		}
		cancel()
		_ = c.Close()
	}
	return e
}

type jsonFile struct {
	Env     Env       `json:"environment"`
	Rounds  int       `json:"rounds"`
	Results []CaseRow `json:"results"`
	Targets []Check   `json:"targets"`
	Memory  []MemRow  `json:"memory_per_held_lock,omitempty"`
	// The waiting-clients case, its hold, and its open targets (apart
	// from Targets: they judge work not done yet).
	Waiters     []WaiterRow   `json:"waiting_clients,omitempty"`
	Hold        time.Duration `json:"hold_ns,omitempty"`
	OpenTargets []Check       `json:"open_targets,omitempty"`
	Nodes       []NodeRow     `json:"nodes_curve,omitempty"`
	Names       []NamesRow    `json:"names,omitempty"`
}

func writeJSON(path string, env Env, o options, res []CaseRow, mem []MemRow, wait []WaiterRow, nodes []NodeRow, names []NamesRow) error {
	f := jsonFile{Env: env, Rounds: o.rounds, Results: res, Targets: append(append(checks(res), memoryChecks(mem)...), namesChecks(names)...), Memory: mem,
		Waiters: wait, OpenTargets: waiterChecks(wait), Nodes: nodes, Names: names}
	if len(wait) > 0 {
		f.Hold = o.hold
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
