package matrix

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/chaos"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
)

// Faults injected together (overlapping) are one event, strikes apart are one each, the
// whole-run settings are none, and held critical sections count only in a
// cell whose faults are all settings.
func TestFaultEvents(t *testing.T) {
	ms := time.Millisecond
	type win struct {
		name       string
		start, end time.Duration
	}
	build := func(ws []win) history.History {
		clk := history.NewManualClock(0)
		rec := history.NewRecorder(clk)
		type ev struct {
			at    time.Duration
			name  string
			start bool
		}
		var evs []ev
		for _, w := range ws {
			evs = append(evs, ev{w.start, w.name, true}, ev{w.end, w.name, false})
		}
		slices.SortStableFunc(evs, func(a, b ev) int { return int(a.at - b.at) })
		for _, e := range evs {
			clk.Set(e.at)
			if e.start {
				rec.NemesisStart(e.name).Ok()
			} else {
				rec.NemesisEnd(e.name).Ok()
			}
		}
		return rec.History()
	}
	for _, tc := range []struct {
		name     string
		wins     []win
		settings []string
		want     int
	}{
		{"none", nil, nil, 0},
		{"three strikes of a majority crash", []win{
			{"crash(n1)", 100 * ms, 150 * ms}, {"crash(n2)", 101 * ms, 150 * ms}, {"crash(n3)", 102 * ms, 151 * ms},
			{"crash(n1)", 300 * ms, 350 * ms}, {"crash(n2)", 300 * ms, 350 * ms}, {"crash(n3)", 300 * ms, 350 * ms},
			{"crash(n1)", 500 * ms, 550 * ms}, {"crash(n2)", 501 * ms, 550 * ms}, {"crash(n3)", 500 * ms, 550 * ms},
			{checker.HeldSection, 99 * ms, 200 * ms}, {checker.HeldSection, 299 * ms, 400 * ms},
		}, nil, 3},
		{"faults injected together start apart on a loaded machine", []win{
			{"partition(m0)", 100 * ms, 235 * ms}, {"partition(m1)", 160 * ms, 236 * ms},
			{"partition(m0)", 325 * ms, 460 * ms}, {"partition(m1)", 326 * ms, 460 * ms},
		}, nil, 2},
		{"a setting is not an event", []win{
			{"partition(a)", 0, 3000 * ms}, {"clock-jump(c)", 500 * ms, 501 * ms}, {"clock-jump(c)", 900 * ms, 901 * ms},
		}, []string{"partition(a)"}, 2},
		{"held sections under a setting", []win{
			{"clock-skew(n1 x1.05)", 0, 3000 * ms},
			{checker.HeldSection, 300 * ms, 600 * ms}, {checker.HeldSection, 700 * ms, 1000 * ms},
		}, []string{"clock-skew(n1 x1.05)"}, 2},
		{"without settings the setting counts", []win{
			{"clock-skew(n1 x1.05)", 0, 3000 * ms},
			{checker.HeldSection, 300 * ms, 600 * ms},
		}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FaultEvents(build(tc.wins), tc.settings); got != tc.want {
				t.Fatalf("FaultEvents = %d, want %d", got, tc.want)
			}
		})
	}
}

// A paced scenario runs with a shorter lease (never below the floor nor
// below what an attempt needs) and for longer; every scenario's timing
// still validates under the quick, the full and the tests' timing.
func TestCellTiming(t *testing.T) {
	paced := Scenario{ID: "paced", Pace: &Pace{LeaseDiv: 4, DurationMul: 2}}
	c := Cell{Scenario: paced}
	got := c.CellTiming(Quick)
	if got.Lease != Quick.Lease/4 || got.Duration != 2*Quick.Duration {
		t.Errorf("quick paced: lease %v, duration %v; want %v, %v", got.Lease, got.Duration, Quick.Lease/4, 2*Quick.Duration)
	}
	short := Quick
	short.Lease = 400 * time.Millisecond
	if got := c.CellTiming(short); got.Lease != MinPacedLease {
		t.Errorf("lease %v paced to %v, want the floor %v", short.Lease, got.Lease, MinPacedLease)
	}
	if got := c.CellTiming(testTiming); got.Lease <= testTiming.AttemptTimeout {
		t.Errorf("paced lease %v not above the attempt timeout %v", got.Lease, testTiming.AttemptTimeout)
	}
	if got := (Cell{Scenario: Scenarios[0]}).CellTiming(Quick); got != Quick {
		t.Errorf("unpaced %s changed the timing: %+v", Scenarios[0].ID, got)
	}
	for _, s := range Scenarios {
		for _, tm := range []RunTiming{Quick, Full, testTiming} {
			if err := (Cell{Scenario: s}).CellTiming(tm).Validate(); err != nil {
				t.Errorf("%s under %v/%v: %v", s.ID, tm.Duration, tm.Lease, err)
			}
		}
	}
}

// The further seeds of an expected-unsafe cell fold into its row: k of n,
// which seeds, and whatever any of them broke.
func TestFoldSeeds(t *testing.T) {
	rs := []report.Row{
		{Verdict: report.Reproduced},
		{Verdict: report.Refuted},
		{Verdict: report.Reproduced, Broken: "lease exclusion: 1 pairs"},
		{Verdict: report.NotApplicable, KeysWithoutExpiry: 2},
	}
	row := foldSeeds(rs, []int64{1, 2, 3, 4})
	if row.Seeds != 4 || row.SeedsReproduced != 2 || row.ReproducedIn != "1,3" || row.SeedsCell() != "2/4" {
		t.Errorf("folded: seeds %d, reproduced %d in %q (%q)", row.Seeds, row.SeedsReproduced, row.ReproducedIn, row.SeedsCell())
	}
	if !strings.Contains(row.Broken, "seed 3: lease exclusion") || row.KeysWithoutExpiry != 2 {
		t.Errorf("folded: broken %q, keys without expiry %d", row.Broken, row.KeysWithoutExpiry)
	}
	if len(Failures(report.Matrix{Results: []report.Row{row}})) != 1 {
		t.Error("a property broken under a further seed does not fail the run")
	}
}

// countingFault records how many of its strikes are in at once.
type countingFault struct {
	mu                sync.Mutex
	in, max, injected int
	recovered         int
}

func (f *countingFault) String() string { return "counting" }
func (f *countingFault) Inject(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in++
	f.injected++
	f.max = max(f.max, f.in)
	return nil
}
func (f *countingFault) Recover(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in--
	f.recovered++
	return nil
}

// A series strikes one at a time, asks for a fresh fault per strike,
// recovers every strike it injected, and stops when recovered.
func TestSeries(t *testing.T) {
	f := &countingFault{}
	var asked []int
	s := newSeries(&series{name: "test", rest: time.Millisecond, until: time.Hour,
		next: func(i int) (chaos.Fault, time.Duration) {
			asked = append(asked, i)
			return f, time.Millisecond
		}})
	if err := s.Inject(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Inject(t.Context()); err == nil {
		t.Error("a series injected twice did not say so")
	}
	for {
		f.mu.Lock()
		n := f.recovered
		f.mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Recover waits for the series to end; a context that ends stops it.
	stop, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Recover(stop); err != nil {
		t.Fatal(err)
	}
	if f.max != 1 || f.in != 0 || f.injected != f.recovered || f.injected != s.strikes {
		t.Errorf("strikes: %d at once at most, %d left in, %d injected, %d recovered, %d counted", f.max, f.in, f.injected, f.recovered, s.strikes)
	}
	for i, k := range asked[:s.strikes] {
		if k != i {
			t.Fatalf("strike %d asked for as %d (%v)", i, k, asked)
		}
	}
	// A series of n strikes stops after the n-th.
	h := &countingFault{}
	two := newSeries(&series{name: "two", n: 2, until: time.Hour, next: func(int) (chaos.Fault, time.Duration) { return h, 0 }})
	if err := two.Inject(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := two.Recover(t.Context()); err != nil || h.injected != 2 || h.recovered != 2 || two.strikes != 2 {
		t.Errorf("a series of 2: %d injected, %d recovered, %d counted, err %v", h.injected, h.recovered, two.strikes, err)
	}
	// A strike whose hold would end after until does not start.
	g := &countingFault{}
	late := newSeries(&series{name: "late", until: time.Millisecond, next: func(int) (chaos.Fault, time.Duration) { return g, time.Hour }})
	if err := late.Inject(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := late.Recover(t.Context()); err != nil || g.injected != 0 || late.strikes != 0 {
		t.Errorf("a strike that does not fit: %d injected, %d counted, err %v", g.injected, late.strikes, err)
	}
	// Short of min strikes, a series strikes on after until, up to limit.
	k := &countingFault{}
	over := newSeries(&series{name: "over", until: time.Nanosecond, min: 3, limit: time.Hour,
		next: func(int) (chaos.Fault, time.Duration) { return k, 0 }})
	if err := over.Inject(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := over.Recover(t.Context()); err != nil || k.injected != 3 || over.strikes != 3 || !over.overtime {
		t.Errorf("a series short of its minimum: %d injected, %d counted, overtime %v, err %v", k.injected, over.strikes, over.overtime, err)
	}
	// A strike that missed (injected nothing) does not count toward min:
	// the series strikes on until min strikes landed.
	m := &countingFault{}
	missing := newSeries(&series{name: "missing", until: time.Nanosecond, min: 3, limit: time.Hour,
		next: func(i int) (chaos.Fault, time.Duration) { return &missingFault{m, i%2 == 0}, 0 }})
	if err := missing.Inject(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := missing.Recover(t.Context()); err != nil || m.injected != 6 || missing.strikes != 3 {
		t.Errorf("a series whose every other strike missed: %d tried, %d counted, err %v", m.injected, missing.strikes, err)
	}
}

// missingFault is a countingFault strike that says whether it missed.
type missingFault struct {
	*countingFault
	miss bool
}

func (f *missingFault) missed() bool { return f.miss }

// Replay: the same seed gives the same fault schedule (the random
// scenario's nemesis draws the same faults in the same order) and the
// same workload choices; another seed draws others. On real servers the
// interleaving still differs from run to run, so the test compares what
// the seed decides, not the outcome.
func TestSameSeedSamePlan(t *testing.T) {
	needRedis(t)
	c := findCell(t, "single", "random")
	// The library's own attempt timeout, so the scenario's pace shortens
	// the lease and the nemesis moves often.
	tm := RunTiming{Duration: 2500 * time.Millisecond, Lease: time.Second, Workers: 2, Work: Quick.Work}
	faults := func(seed int64) []string {
		t.Helper()
		_, h, err := RunCell(t.Context(), c, tm, seed, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, w := range checker.Windows(h) {
			if w.Name != checker.HeldSection {
				out = append(out, w.Name)
			}
		}
		return out
	}
	a, b, other := faults(1), faults(1), faults(2)
	// The last move may or may not start before the nemesis stops: compare
	// the moves both runs made.
	n := min(len(a), len(b))
	if n < 4 {
		t.Fatalf("too few moves to compare: %v, %v", a, b)
	}
	if !slices.Equal(a[:n], b[:n]) {
		t.Errorf("seed 1 twice, different faults:\n%v\n%v", a, b)
	}
	if m := min(n, len(other)); slices.Equal(a[:m], other[:m]) {
		t.Errorf("seeds 1 and 2 drew the same %d faults: %v", m, a[:m])
	}
	// The cell's seed depends on the run's seed and the cell alone.
	if c.seed(1) != c.seed(1) || c.seed(1) == c.seed(2) || c.seed(1) == findCell(t, "single", "latency").seed(1) {
		t.Error("cell seeds do not follow from (run seed, cell)")
	}
}
