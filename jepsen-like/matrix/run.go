package matrix

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/quorumlock/quorumlock/chaos"
	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// LockName is the name every worker of a cell locks.
const LockName = "chaos-counter"

// Cell is one mode under one scenario, running one workload (the mutex
// workload when Workload is zero).
type Cell struct {
	Mode     Mode
	Scenario Scenario
	Workload catalog.Workload
}

// Cells lists the cells of modes × scenarios that apply, scenario by
// scenario (the order of the report), with the mutex workload.
func Cells(modes []Mode, scenarios []Scenario) []Cell {
	return CellsOf(modes, scenarios, nil, false)
}

// CellsOf lists the cells of modes × scenarios × workloads that apply
// (nil workloads: the mutex workload alone). A workload other than mutex
// runs only on modes that honour it (Mode.Ours); with quick, only in the
// modes and scenarios its quick form names (catalog.Workload.Quick), and
// a mode only in its quick scenarios (catalog.Mode.QuickScenarios), and
// not where another of the workloads covers it (catalog.Workload.Covered).
func CellsOf(modes []Mode, scenarios []Scenario, workloads []catalog.Workload, quick bool) []Cell {
	if workloads == nil {
		w, _ := catalog.FindWorkload(catalog.DefaultWorkload)
		workloads = []catalog.Workload{w}
	}
	var out []Cell
	for _, w := range workloads {
		for _, s := range scenarios {
			for _, m := range modes {
				if w.ID != catalog.DefaultWorkload && (!m.Ours || quick && !w.Quick(m.ID, s.ID)) || quick && (!m.Quick(s.ID) || w.Covered(m.ID, s.ID, workloads)) {
					continue
				}
				if s.Applies == nil || s.Applies(m) {
					out = append(out, Cell{Mode: m, Scenario: s, Workload: w})
				}
			}
		}
	}
	return out
}

// kind is the cell's workload driver.
func (c Cell) kind() workload.LockKind {
	if c.Workload.Kind == "" {
		return workload.Mutex
	}
	return c.Workload.Kind
}

// modeName is the mode as reports show it: with the workload when it is
// not the mutex workload ("redlock-3/rw").
func (c Cell) modeName() string {
	if k := c.kind(); k != workload.Mutex {
		return c.Mode.ID + "/" + string(k)
	}
	return c.Mode.ID
}

// Expect is the cell's expectation.
func (c Cell) Expect() Expectation { return c.Scenario.Expect(c.Mode) }

func (c Cell) String() string { return c.modeName() + " × " + c.Scenario.ID }

// seed derives the cell's seed from the run's: the same for the same cell
// whatever else is selected.
func (c Cell) seed(run int64) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%s", run, c.modeName(), c.Scenario.ID)
	return h.Sum64()
}

// Config is a run of the matrix.
type Config struct {
	Modes     []Mode
	Scenarios []Scenario
	// Workloads are the workloads each cell runs (nil: mutex alone).
	Workloads []catalog.Workload
	// QuickWorkloads runs each workload but mutex only in the scenarios
	// of its quick form (catalog.Workload.Scenarios).
	QuickWorkloads bool
	Timing         RunTiming
	// Seed makes the run's random choices (work times, the random
	// scenario's nemesis).
	Seed int64
	// Parallel is how many cells run at once (default 1).
	Parallel int
	// Seeds, when above 1, runs every expected-unsafe cell that many
	// times, under seeds Seed, Seed+1, …, and reports in how many it
	// reproduced (report.Row.Seeds); expected-safe cells run once.
	Seeds int
	// UnsafeOnly runs only the cells expected unsafe.
	UnsafeOnly bool
	// CheckTimeout bounds each linearizability check (default 5 s).
	CheckTimeout time.Duration
	// Progress, if set, is called when a cell starts and when it ends;
	// calls are serialised.
	Progress func(Progress)
}

// cells are the cells the run covers.
func (cfg Config) cells() []Cell {
	cells := CellsOf(cfg.Modes, cfg.Scenarios, cfg.Workloads, cfg.QuickWorkloads)
	if cfg.UnsafeOnly {
		cells = slices.DeleteFunc(cells, func(c Cell) bool { return c.Expect().Safe })
	}
	return cells
}

// Progress reports one cell starting (Done false) or ending.
type Progress struct {
	// Index is the run's 0-based position; Total the number of runs
	// (cells, and the extra seeds of expected-unsafe cells).
	Index, Total int
	Cell         Cell
	// Seed is the run seed the cell ran with.
	Seed int64
	Done bool
	// Elapsed is the cell's wall time (when Done).
	Elapsed time.Duration
	// Result is the cell's row (when Done without Err).
	Result report.Row
	Err    error
}

// RunResult is the result of a matrix run.
type RunResult struct {
	Matrix report.Matrix
	// Histories are the cells' histories, in the order of Matrix.Results.
	Histories []history.History
	// Errors are the cells that could not run (cluster start, setup), by
	// cell; their rows are missing from Matrix.
	Errors []error
}

// Failures returns the rows whose mode is expected safe under the scenario
// but showed a violation of the claim's property (verdict refuted), and the
// rows of any mode that left lock keys without expiry (a lock that never
// frees itself is a bug whatever the configuration).
func Failures(m report.Matrix) []report.Row {
	var out []report.Row
	for _, r := range m.Results {
		if (r.ExpectedSafe && r.Verdict == report.Refuted) || r.KeysWithoutExpiry > 0 || r.Broken != "" {
			out = append(out, r)
		}
	}
	return out
}

// Run runs every applicable cell of cfg.Modes × cfg.Scenarios, each on a
// fresh cluster, and returns their rows in cell order. A cell that cannot
// run is reported in RunResult.Errors and the others still run; ctx ending
// stops the run (the error is ctx's).
func Run(ctx context.Context, cfg Config) (RunResult, error) {
	if err := cfg.Timing.Validate(); err != nil {
		return RunResult{}, err
	}
	cells := cfg.cells()
	if len(cells) == 0 {
		return RunResult{}, errors.New("matrix: no cell to run: no scenario applies to the selected modes (or none is expected unsafe)")
	}
	par := max(cfg.Parallel, 1)
	// The cells under the run's seed, then the expected-unsafe ones under
	// each further seed.
	type job struct {
		cell int
		seed int64
	}
	var jobs []job
	for i := range cells {
		jobs = append(jobs, job{i, cfg.Seed})
	}
	for k := 1; k < cfg.Seeds; k++ {
		for i, c := range cells {
			if !c.Expect().Safe {
				jobs = append(jobs, job{i, cfg.Seed + int64(k)})
			}
		}
	}
	type slot struct {
		res  report.Row
		h    history.History
		err  error
		done bool
	}
	slots := make([]slot, len(jobs))
	var mu sync.Mutex // serialises Progress
	progress := func(p Progress) {
		if cfg.Progress != nil {
			mu.Lock()
			defer mu.Unlock()
			cfg.Progress(p)
		}
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range par {
		wg.Go(func() {
			for i := range next {
				j := jobs[i]
				c := cells[j.cell]
				progress(Progress{Index: i, Total: len(jobs), Cell: c, Seed: j.seed})
				start := time.Now()
				res, h, err := RunCell(ctx, c, cfg.Timing, j.seed, cfg.CheckTimeout)
				if j.seed != cfg.Seed {
					h = history.History{} // only the run's own seed keeps its history
					res.Timeline = nil
				}
				slots[i] = slot{res: res, h: h, err: err, done: true}
				progress(Progress{Index: i, Total: len(jobs), Cell: c, Seed: j.seed, Done: true, Elapsed: time.Since(start), Result: res, Err: err})
			}
		})
	}
feed:
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()

	// Fold the further seeds into their cell's row.
	type seeded struct {
		seed int64
		res  report.Row
	}
	extra := map[int][]seeded{}
	var extraErrs []error
	for i, s := range slots {
		j := jobs[i]
		switch {
		case j.seed == cfg.Seed || !s.done:
		case s.err != nil:
			extraErrs = append(extraErrs, fmt.Errorf("%v, seed %d: %w", cells[j.cell], j.seed, s.err))
		default:
			extra[j.cell] = append(extra[j.cell], seeded{j.seed, s.res})
		}
	}
	out := RunResult{Matrix: report.Matrix{Seed: cfg.Seed}}
	for i, s := range slots[:len(cells)] {
		switch {
		case !s.done:
		case s.err != nil:
			out.Errors = append(out.Errors, fmt.Errorf("%v: %w", cells[i], s.err))
		default:
			res := s.res
			if cfg.Seeds > 1 && !cells[i].Expect().Safe {
				rs, seeds := []report.Row{res}, []int64{cfg.Seed}
				for _, e := range extra[i] {
					rs, seeds = append(rs, e.res), append(seeds, e.seed)
				}
				res = foldSeeds(rs, seeds)
			}
			out.Matrix.Results = append(out.Matrix.Results, res)
			out.Histories = append(out.Histories, s.h)
		}
	}
	out.Errors = append(out.Errors, extraErrs...)
	return out, ctx.Err()
}

// foldSeeds folds the runs rs of one cell under seeds (the run's own
// first) into the first one's row: how many reproduced the expectation,
// under which seeds, and whatever any of them broke (a property broken
// under any seed fails the run).
func foldSeeds(rs []report.Row, seeds []int64) report.Row {
	row := rs[0]
	row.Seeds = len(rs)
	row.SeedsReproduced = 0
	var in []string
	for i, r := range rs {
		if r.Verdict == report.Reproduced {
			row.SeedsReproduced++
			in = append(in, fmt.Sprint(seeds[i]))
		}
		if i == 0 {
			continue
		}
		if r.Broken != "" {
			row.Broken = strings.TrimPrefix(row.Broken+fmt.Sprintf("; seed %d: %s", seeds[i], r.Broken), "; ")
		}
		row.KeysWithoutExpiry += r.KeysWithoutExpiry
	}
	row.ReproducedIn = strings.Join(in, ",")
	return row
}

// cell is the state of one running cell.
type cell struct {
	// repeaters close when a repeating fault source (a series, the
	// nemesis) is done; the workers run on past the duration until they
	// all are (at most twice the duration).
	repeaters []<-chan struct{}
	mode      Mode
	sc        Scenario
	kind      workload.LockKind
	timing    RunTiming
	cluster   *chaos.Cluster
	rec       *history.Recorder
	seed      uint64
}

// RunCell runs one cell on a fresh cluster and checks its history. The row
// carries a timeline for the HTML page. The cell runs with t paced by its
// scenario (Cell.CellTiming).
func RunCell(ctx context.Context, c Cell, t RunTiming, seed int64, checkTimeout time.Duration) (report.Row, history.History, error) {
	if err := t.Validate(); err != nil {
		return report.Row{}, history.History{}, err
	}
	ct := c.CellTiming(t)
	if err := ct.Validate(); err != nil {
		return report.Row{}, history.History{}, fmt.Errorf("matrix: %v paced: %w", c, err)
	}
	if c.Mode.Lock == nil {
		return report.Row{}, history.History{}, fmt.Errorf("matrix: mode %s has no Lock", c.Mode.ID)
	}
	h, stray, settings, panics, err := runCell(ctx, c, ct, c.seed(seed))
	if err != nil {
		return report.Row{}, h, err
	}
	if checkTimeout <= 0 {
		checkTimeout = 5 * time.Second
	}
	// The grace for a lease's loss signal is about scheduling, not the
	// lease: a quarter of the run's lease, also in a paced cell (a quarter
	// of a 250 ms lease was outrun by timers firing late at load 16).
	attempt := t.AttemptTimeout
	if attempt <= 0 {
		attempt = catalog.AttemptTimeout
	}
	opts := []checker.Option{checker.WithTimeout(checkTimeout), checker.WithSignalGrace(t.Lease / 4),
		checker.WithWakeupBound(checker.WakeupBound(catalog.RetryInterval, attempt)), checker.WithStarveBound(catalog.StarveBound),
		checker.WithFairBound(catalog.FairBound(t.Lease, checker.WakeupBound(catalog.RetryInterval, attempt)))}
	if c.Scenario.LeasesHold {
		opts = append(opts, checker.WithClientFaults())
	}
	rep := checker.Check(h, opts...)
	exp := c.Expect()
	res := report.FromReport(c.modeName(), c.Scenario.ID, exp.Claim, exp.Safe, rep).WithExpiry(stray)
	res.FaultEvents = FaultEvents(h, settings)
	res = judgeMore(c, exp, res, rep)
	res = catalog.JudgeWorkload(c.Workload, c.Mode, c.Scenario, exp, res, rep)
	res = catalog.JudgePanics(res, panics)
	if res.ExpectedSafe && res.Verdict == report.Reproduced && res.Contested < t.MinContested {
		res.Verdict = report.Inconclusive
		res.VerdictNote = fmt.Sprintf("inconclusive: no violation, but only %d contested acquisitions (attempts while a fault was in effect and another client held a valid lease), %d needed; %s",
			res.Contested, t.MinContested, res.VerdictNote)
	}
	res.Replay = ReplayCommand(c, t, seed)
	return res.WithTimeline(h), h, nil
}

// FaultEvents counts the fault events of a history: the groups of fault
// windows that overlap one another (faults injected together, such as a
// majority crashed at once, are one event however late each goroutine
// started), leaving out the held critical sections (checker.HeldSection)
// and the windows named in settings (whole-run conditions: a clock rate, a
// split). Strikes are apart: a series heals before it rests, repeated
// faults heal for 40 % of their slot, a nemesis rests between moves. In a
// cell whose faults are all settings, each held critical section under
// them is an event: the moment the setting is tested.
func FaultEvents(h history.History, settings []string) int {
	skip := map[string]bool{}
	for _, s := range settings {
		skip[s] = true
	}
	var wins, held []checker.Window
	for _, w := range checker.Windows(h) {
		switch {
		case skip[w.Name]:
		case w.Name == checker.HeldSection:
			held = append(held, w)
		default:
			wins = append(wins, w)
		}
	}
	if len(wins) == 0 {
		wins = held
	}
	slices.SortFunc(wins, func(a, b checker.Window) int { return cmp.Compare(a.Start, b.Start) })
	n := 0
	var end time.Duration
	for i, w := range wins {
		if i == 0 || w.Start > end {
			n++
			end = w.End
			continue
		}
		end = max(end, w.End)
	}
	return n
}

// ReplayCommand is the command line that runs cell c again: the same
// seed gives the same fault schedule, nemesis moves and workload choices
// (each worker's k-th tenure has the same work and think times); the
// interleaving still follows the machine (see TestSameSeedSamePlan).
func ReplayCommand(c Cell, t RunTiming, seed int64) string {
	return fmt.Sprintf("quorumlock-lab chaos --modes %s --scenarios %s --workloads %s --seed %d --duration %v --lease %v --workers %d",
		c.Mode.ID, c.Scenario.ID, c.kind(), seed, t.Duration, t.Lease, t.Workers)
}

// LivenessFloor is catalog.LivenessFloor.
const LivenessFloor = catalog.LivenessFloor

// ExpectsProgress reports whether a cell must keep acquiring
// (catalog.ExpectsProgress).
func ExpectsProgress(c Cell) bool { return catalog.ExpectsProgress(c.Mode, c.Scenario) }

// judgeMore judges the cell's properties besides its claim's
// (catalog.Judge).
func judgeMore(c Cell, exp Expectation, res report.Row, rep checker.Report) report.Row {
	return catalog.Judge(c.Mode, c.Scenario, exp, res, rep)
}

// runCell runs the cell's workers and faults and returns the history,
// the lock keys left without expiry on the nodes once both ended, the
// names of the faults that were the cell's whole-run setting, and the
// panics of the library in the workers (a judged failure, not an error).
func runCell(ctx context.Context, c Cell, t RunTiming, seed uint64) (history.History, []string, []string, []*workload.PanicError, error) {
	topo := chaos.Topology{Persistence: c.Scenario.Persistence, Backend: backendOf(ctx)}
	if c.Mode.Group {
		topo.Groups = 1
	} else {
		topo.Masters = c.Mode.Masters
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	cl, err := chaos.Start(sctx, topo)
	cancel()
	if err != nil {
		return history.History{}, nil, nil, nil, err
	}
	defer cl.Close()

	rec := history.NewRecorder(history.NewClock())
	rec.SetMeta("mode", c.Mode.ID)
	rec.SetMeta("workload", string(c.kind()))
	rec.SetMeta("scenario", c.Scenario.ID)
	rec.SetMeta("seed", fmt.Sprint(seed))
	rec.SetMeta("lease", t.Lease.String())
	if t.AttemptTimeout > 0 {
		rec.SetMeta("attempt_timeout", t.AttemptTimeout.String())
	}
	cc := &cell{mode: c.Mode, sc: c.Scenario, kind: c.kind(), timing: t, cluster: cl, rec: rec, seed: seed}
	p, err := realisations[c.Scenario.ID](cc)
	if err != nil {
		return history.History{}, nil, nil, nil, err
	}
	settings := p.settings
	for _, f := range p.before {
		settings = append(settings, f.String())
	}

	if err := presetFences(ctx, cl, c.kind(), t.Workers, seed); err != nil {
		return history.History{}, nil, nil, nil, err
	}
	// Whole-run conditions go in before the workers connect (a clock
	// fault restarts its node) and are healed once they stopped.
	var before []chaos.Fault
	for _, f := range p.before {
		f = record(rec, f)
		before = append(before, f)
		if err := f.Inject(ctx); err != nil {
			healAll(before)
			return history.History{}, nil, nil, nil, err
		}
	}
	defer healAll(before)

	workers, closeAll, err := cc.workers(ctx, p)
	defer closeAll()
	if err != nil {
		return history.History{}, nil, nil, nil, err
	}
	res := resource.NewUnfenced(rec)
	if c.Mode.Fencing {
		res = resource.NewFenced(rec)
	}

	var guard workload.Guard
	if c.kind() == workload.Guarded {
		g, stop, err := startGuard(ctx)
		defer stop()
		if err != nil {
			return history.History{}, nil, nil, nil, err
		}
		guard = g
	}
	// The faults run next to the workers; the workers stop at Duration,
	// by when every fault of the plan has healed.
	if p.nemesis != nil {
		p.nemesisDone = make(chan struct{})
		cc.repeaters = append(cc.repeaters, p.nemesisDone)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	go func() {
		defer wcancel()
		if sleep(wctx, t.Duration) {
			cc.waitRepeaters(wctx)
		}
	}()
	faultErr := make(chan error, 1)
	go func() { faultErr <- cc.runFaults(ctx, p) }()
	wc := workload.Config{
		Work:           t.Work,
		AcquireTimeout: c.kind().AcquireTimeout(t.Lease+t.Lease/2, t.Lease, t.Workers),
		Seed:           seed,
		CounterLock:    c.kind().CounterLock(LockName),
		Guard:          guard,
	}
	if w := c.kind().Work(t.Lease); w != (workload.Range{}) {
		wc.Work = w
	}
	if th := c.Scenario.Think; th > 0 {
		wc.Think = workload.Range{Min: th, Max: th * 3 / 2}
	}
	panics, werr := workload.SplitPanics(workload.Run(wctx, rec, res, workers, wc))
	ferr := <-faultErr
	h := rec.History()
	if err := errors.Join(werr, ferr); err != nil {
		return h, nil, nil, nil, err
	}
	healAll(before)
	before = nil
	// Every fault has healed and the workers have stopped: whatever they
	// left must carry a TTL (the Expiry property; nodes that do not answer
	// are not counted).
	stray, _ := cl.KeysWithoutExpiry(ctx, 2*time.Second)
	return h, stray, settings, panics, ctx.Err()
}

// workers builds each worker's connections and lock.
func (c *cell) workers(ctx context.Context, p plan) ([]workload.Worker, func(), error) {
	var closers []func() error
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}
	var out []workload.Worker
	for w := range c.kind.Clients(c.timing.Workers) {
		var opts []*redis.Options
		if p.nodes != nil {
			opts = p.nodes(w)
		}
		switch {
		case opts != nil:
		case c.mode.Group:
			opts = []*redis.Options{c.cluster.Groups[0].Options()}
		default:
			for _, n := range c.cluster.Masters {
				opts = append(opts, n.Options())
			}
		}
		clients := make([]redis.UniversalClient, len(opts))
		for i, o := range opts {
			rc := redis.NewClient(o)
			if p.hooks != nil {
				rc.AddHook(p.hooks(w))
			}
			clients[i] = rc
			closers = append(closers, rc.Close)
		}
		if err := connect(ctx, clients); err != nil {
			return nil, closeAll, fmt.Errorf("matrix: mode %s, worker %d: %w", c.mode.ID, w, err)
		}
		l, closeLock, err := c.mode.Lock(LockParams{Name: LockName, LeaseTime: c.timing.Lease, AttemptTimeout: c.timing.AttemptTimeout,
			Watchdog: p.watchdog || c.kind.Watchdog(), DriftFactor: p.driftFactor, Clients: clients, Workload: c.kind, Worker: w})
		if err != nil {
			return nil, closeAll, fmt.Errorf("matrix: mode %s, worker %d: %w", c.mode.ID, w, err)
		}
		if closeLock != nil {
			closers = append(closers, closeLock)
		}
		out = append(out, workload.Worker{ID: w, Locker: l, Gate: p.gates[w]})
	}
	return out, closeAll, nil
}

// connect opens one connection of every client before the workload starts,
// so that the first acquisitions measure the lock and not the dials of a
// cold start (on a loaded machine, 4 workers × 5 nodes dialling at once
// through the proxies can outlast the first attempts' deadlines).
func connect(ctx context.Context, clients []redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var g errgroup.Group
	for _, c := range clients {
		g.Go(func() error { return c.Ping(ctx).Err() })
	}
	return g.Wait()
}

// runFaults plays the plan's schedule and nemesis; both heal what they
// injected before returning.
func (c *cell) runFaults(ctx context.Context, p plan) error {
	var wg sync.WaitGroup
	var serr, nerr error
	if len(p.schedule) > 0 {
		wg.Go(func() { serr = p.schedule.Run(ctx, nil) })
	}
	if p.nemesis != nil {
		wg.Go(func() {
			if p.nemesisDone != nil {
				defer close(p.nemesisDone)
			}
			t := time.NewTimer(p.nemesisFrom)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			// The nemesis stops at nemesisTo once it made RepeatEvents
			// moves, or later when it has not yet (a loaded machine),
			// at the latest at the cell's overtime.
			nctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				defer cancel()
				if !sleep(nctx, p.nemesisTo-p.nemesisFrom) {
					return
				}
				limit := time.NewTimer(max(c.overtime()-p.nemesisTo, 0))
				defer limit.Stop()
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for p.moves != nil && p.moves.Load() < RepeatEvents {
					select {
					case <-tick.C:
					case <-limit.C:
						return
					case <-nctx.Done():
						return
					}
				}
			}()
			nerr = p.nemesis.Run(nctx)
		})
	}
	wg.Wait()
	return errors.Join(serr, nerr)
}

// waitRepeaters waits, once the workers' duration is over, for every
// repeating fault source to be done, at most another duration; when it
// waited, the workers go on for a quarter lease after the last one ended
// (as the faults of a plan end a quarter lease before the duration).
func (c *cell) waitRepeaters(ctx context.Context) {
	limit := time.NewTimer(c.timing.Duration)
	defer limit.Stop()
	waited := false
	for _, done := range c.repeaters {
		select {
		case <-done:
			continue
		default:
		}
		waited = true
		select {
		case <-done:
		case <-limit.C:
			return
		case <-ctx.Done():
			return
		}
	}
	if waited {
		sleep(ctx, c.timing.Lease/4)
	}
}

// healAll recovers faults, on a fresh bounded context.
func healAll(faults []chaos.Fault) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, f := range faults {
		_ = f.Recover(ctx)
	}
}
