package matrix

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // refused dials are what the faults are for
	goleak.VerifyTestMain(m,
		// toxiproxy v2.12.0 leaves a noop toxic's goroutine blocked on a
		// channel send when a link is torn down while data is in flight
		// (a proxy closed under load, a toxic removed mid-stream); it is
		// inside toxiproxy and ends with the process.
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"))
}

// Every mode and scenario the issue names exists, in the issue's order.
func TestIssueIDs(t *testing.T) {
	wantModes := []string{"single", "single+wait", "failover", "redlock-3", "redlock-5", "redlock-5+fencing", "multilock-3",
		"redlock-3+functions", "redlock-3+restart"} // the last two from issue 27 (Redis Functions) and issue 25 (restart detection)
	if got := modeIDs(Modes); !slices.Equal(got, wantModes) {
		t.Errorf("modes %v, want %v", got, wantModes)
	}
	wantScenarios := []string{"baseline", "partition-minority", "partition-majority", "latency", "node-pause",
		"crash-restart-aof", "crash-restart-nopersist", "crash-restart-delayed", "failover", "client-pause",
		"clock-jump", "clock-jump-partition", "random"}
	var ids []string
	for _, s := range Scenarios {
		ids = append(ids, s.ID)
	}
	for _, id := range wantScenarios {
		if !slices.Contains(ids, id) {
			t.Errorf("scenario %q missing", id)
		}
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("scenario %q twice", id)
		}
		seen[id] = true
	}
}

// Every mode and scenario is complete, and every cell names a claim from
// the literature with a reason for its prediction.
func TestTablesComplete(t *testing.T) {
	for _, m := range Modes {
		if m.Summary == "" || m.Lock == nil || m.Nodes() < 1 {
			t.Errorf("mode %s incomplete: %+v", m.ID, m)
		}
		if m.Group == (m.Masters > 0) {
			t.Errorf("mode %s: exactly one of Group and Masters", m.ID)
		}
	}
	sources := []report.Source{report.Kleppmann, report.RedlockSpec, report.Antirez, report.JepsenEtcd}
	for _, s := range Scenarios {
		if s.Summary == "" || s.Expect == nil || realisations[s.ID] == nil {
			t.Errorf("scenario %s incomplete", s.ID)
			continue
		}
		applies := 0
		for _, m := range Modes {
			if s.Applies != nil && !s.Applies(m) {
				continue
			}
			applies++
			e := s.Expect(m)
			if !slices.Contains(sources, e.Claim.Source) || e.Claim.Text == "" || e.Claim.Property == "" {
				t.Errorf("%s × %s: claim %+v is not from the literature table", m.ID, s.ID, e.Claim)
			}
			if e.Why == "" {
				t.Errorf("%s × %s: no reason for the prediction", m.ID, s.ID)
			}
		}
		if applies == 0 {
			t.Errorf("scenario %s applies to no mode", s.ID)
		}
	}
}

// The expected-safe table, as docs/chaos-matrix.md documents it: "S" safe,
// "U" unsafe, "-" does not apply. Columns follow Modes.
var wantExpected = map[string]string{
	"baseline":                "S S S S S S S S S",
	"partition-minority":      "- S S S S S S S S",
	"partition-majority":      "S S S S S S S S S",
	"partition-all":           "S S S S S S S S S",
	"latency":                 "S S S S S S S S S",
	"slow-acquire":            "S S S S S S S S S",
	"clock-rate-fast":         "S S S S S S S S S",
	"clock-rate-beyond":       "U U U U U U S U U",
	"node-pause":              "S S S S S S S S S",
	"crash-restart-aof":       "S S S S S S S S S",
	"crash-restart-nopersist": "U U U U U U S U S",
	"crash-restart-minority":  "- - - U U U S U S",
	"crash-restart-delayed":   "S S S S S S S S S",
	"failover":                "- S U - - - - - -",
	"client-pause":            "U U U U U S U U U",
	"clock-offset":            "S - - S S S S S S",
	"renewal-hang":            "S S S S S S S S S",
	"holder-isolated":         "U U U U U U U U U",
	"clock-jump":              "U U U U U U S U U",
	"clock-jump-partition":    "- - - U U U S U U",
	"expiry-race":             "S S S S S - S S S",
	"random":                  "S S U S S S S S S",
	"lost-wakeups":            "S S S S S S S S S",
	"herd":                    "S S S S S S S S S",
}

func TestExpectedTable(t *testing.T) {
	if len(wantExpected) != len(Scenarios) {
		t.Errorf("table has %d scenarios, Scenarios %d", len(wantExpected), len(Scenarios))
	}
	for _, s := range Scenarios {
		var got []string
		for _, m := range Modes {
			switch {
			case s.Applies != nil && !s.Applies(m):
				got = append(got, "-")
			case s.Expect(m).Safe:
				got = append(got, "S")
			default:
				got = append(got, "U")
			}
		}
		if g := strings.Join(got, " "); g != wantExpected[s.ID] {
			t.Errorf("%s: expected %q, want %q (modes %v)", s.ID, g, wantExpected[s.ID], modeIDs(Modes))
		}
	}
}

func TestCells(t *testing.T) {
	cells := Cells(Modes, Scenarios)
	n := 0
	for _, row := range wantExpected {
		n += len(strings.Fields(row)) - strings.Count(row, "-")
	}
	if len(cells) != n {
		t.Fatalf("%d cells, want %d", len(cells), n)
	}
	// Scenario-major order, modes in their order within a scenario.
	if cells[0].Scenario.ID != "baseline" || cells[0].Mode.ID != "single" || cells[1].Mode.ID != "single+wait" {
		t.Errorf("first cells %v, %v", cells[0], cells[1])
	}
	// A cell's seed depends on the run's seed and the cell only.
	if cells[3].seed(1) != cells[3].seed(1) || cells[3].seed(1) == cells[3].seed(2) || cells[3].seed(1) == cells[4].seed(1) {
		t.Error("cell seeds not derived from (run seed, cell)")
	}
}

func TestSelect(t *testing.T) {
	ms, err := SelectModes(Modes, "redlock-5, single")
	if err != nil || len(ms) != 2 || ms[0].ID != "redlock-5" || ms[1].ID != "single" {
		t.Errorf("SelectModes: %v %v", modeIDs(ms), err)
	}
	if ms, err := SelectModes(Modes, "all"); err != nil || len(ms) != len(Modes) {
		t.Errorf("all modes: %d %v", len(ms), err)
	}
	if _, err := SelectModes(Modes, "redlock-4"); err == nil || !strings.Contains(err.Error(), "redlock-5") {
		t.Errorf("unknown mode: %v (should list the known ones)", err)
	}
	ss, err := SelectScenarios(Scenarios, "failover,baseline")
	if err != nil || len(ss) != 2 || ss[0].ID != "failover" {
		t.Errorf("SelectScenarios: %v", err)
	}
	if _, err := SelectScenarios(Scenarios, "meteor"); err == nil {
		t.Error("unknown scenario accepted")
	}
}

func TestTimingValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		t    RunTiming
		ok   bool
	}{
		{"quick", Quick, true},
		{"full", Full, true},
		{"one worker", RunTiming{Duration: 3 * time.Second, Lease: time.Second, Workers: 1}, false},
		{"lease too short", RunTiming{Duration: 3 * time.Second, Lease: 10 * time.Millisecond, Workers: 4}, false},
		{"duration too short for the lease", RunTiming{Duration: 2 * time.Second, Lease: time.Second, Workers: 4}, false},
		{"the tests' attempt timeout", testTiming, true},
		{"negative attempt timeout", RunTiming{Duration: 3 * time.Second, Lease: time.Second, Workers: 4, AttemptTimeout: -1}, false},
		{"attempt timeout as long as the lease", RunTiming{Duration: 3 * time.Second, Lease: time.Second, Workers: 4, AttemptTimeout: time.Second}, false},
	} {
		if err := tt.t.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestFailures(t *testing.T) {
	m := report.Matrix{Results: []report.Row{
		{Mode: "a", ExpectedSafe: true, Verdict: report.Refuted},
		{Mode: "b", ExpectedSafe: false, Verdict: report.Refuted},
		{Mode: "c", ExpectedSafe: true, Verdict: report.Reproduced},
		{Mode: "d", ExpectedSafe: true, Verdict: report.NotApplicable},
		{Mode: "e", ExpectedSafe: false, Verdict: report.Reproduced, KeysWithoutExpiry: 1},
	}}
	got := Failures(m)
	if len(got) != 2 || got[0].Mode != "a" || got[1].Mode != "e" {
		t.Errorf("Failures = %v, want a and e (keys without expiry fail any mode)", got)
	}
}

func cellOf(t *testing.T, mode, scenario string) Cell {
	t.Helper()
	ms, err := SelectModes(Modes, mode)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := SelectScenarios(Scenarios, scenario)
	if err != nil {
		t.Fatal(err)
	}
	return Cell{Mode: ms[0], Scenario: ss[0]}
}

// Token order judges fenced cells, liveness the cells that expect
// progress; a clean row stays reproduced and says what it was judged on.
func TestJudgeMore(t *testing.T) {
	clean := report.Row{Property: "mutual-exclusion", Acquisitions: 100, Attempts: 100, Availability: 1, ExpectedSafe: true, Verdict: report.Reproduced}
	regress := checker.Report{}
	regress.TokenOrder.Count = 3

	c := cellOf(t, "redlock-5+fencing", "partition-minority")
	if r := judgeMore(c, c.Expect(), clean, regress); r.Verdict != report.Refuted || !strings.Contains(r.VerdictNote, "3 token regressions") {
		t.Errorf("fenced cell with token regressions: %s %q", r.Verdict, r.VerdictNote)
	}
	c = cellOf(t, "redlock-5", "partition-minority")
	r := judgeMore(c, c.Expect(), clean, regress)
	if r.Verdict != report.Reproduced || r.Judged != "mutual-exclusion, expiry, lease-exclusion, liveness" || r.Broken != "" {
		t.Errorf("unfenced cell: %s, judged on %q", r.Verdict, r.Judged)
	}
	starved := clean
	starved.Acquisitions, starved.Availability = 4, 0.04
	if r := judgeMore(c, c.Expect(), starved, checker.Report{}); r.Verdict != report.Refuted || !strings.Contains(r.VerdictNote, "liveness") {
		t.Errorf("a majority lock under a minority fault that stopped acquiring: %s %q", r.Verdict, r.VerdictNote)
	}
	c = cellOf(t, "multilock-3", "partition-minority") // needs every node: no progress expected
	if r := judgeMore(c, c.Expect(), starved, checker.Report{}); r.Verdict != report.Reproduced {
		t.Errorf("multilock under a minority fault judged on liveness: %q", r.VerdictNote)
	}

	// A cell expected unsafe on its claim whose faults strike clients only
	// still fails on two valid leases at once, or a lease taken over
	// without its holder being told: Broken says so, Failures counts it.
	c = cellOf(t, "redlock-3", "client-pause")
	unsafeRow := clean
	unsafeRow.Property, unsafeRow.ExpectedSafe = "data-integrity", false
	bad := checker.Report{}
	bad.LeaseExclusion = checker.Result{Verdict: checker.Violated, Count: 2}
	bad.Signals = checker.Result{Verdict: checker.Violated, Count: 1}
	r = judgeMore(c, c.Expect(), unsafeRow, bad)
	if !strings.Contains(r.Broken, "lease exclusion: 2") || !strings.Contains(r.Broken, "loss signal: 1") || r.Verdict != report.Reproduced {
		t.Errorf("client-pause with two valid leases and a missed signal: broken %q, %s", r.Broken, r.Verdict)
	}
	if f := Failures(report.Matrix{Results: []report.Row{r}}); len(f) != 1 {
		t.Errorf("Failures counts %d rows, want the broken one", len(f))
	}
}

// TestRealisations: the matrix realises exactly the catalog's scenarios
// that do not say they cannot run on it.
func TestRealisations(t *testing.T) {
	for _, s := range catalog.Scenarios {
		ok, why := s.RunsOn(catalog.Matrix)
		if _, has := realisations[s.ID]; has != ok {
			t.Errorf("scenario %s: runs on the matrix %v (%s), realised %v", s.ID, ok, why, has)
		}
	}
	if len(realisations) != len(Scenarios) {
		t.Errorf("%d realisations for %d scenarios", len(realisations), len(Scenarios))
	}
}

// The quick matrix runs a mode with Quick scenarios only in those; the full
// matrix runs it wherever a scenario applies.
func TestQuickModeScenarios(t *testing.T) {
	m, ok := FindMode(Modes, "redlock-3+functions")
	if !ok || len(m.QuickScenarios) == 0 {
		t.Fatalf("no mode redlock-3+functions with quick scenarios: %v", m.QuickScenarios)
	}
	ws, err := catalog.SelectWorkloads("all")
	if err != nil {
		t.Fatal(err)
	}
	var quick, full []string
	for _, c := range CellsOf([]Mode{m}, Scenarios, ws, true) {
		quick = append(quick, c.Scenario.ID+"/"+c.Workload.ID)
	}
	for _, c := range CellsOf([]Mode{m}, Scenarios, nil, false) {
		full = append(full, c.Scenario.ID)
	}
	var want []string
	for _, s := range m.QuickScenarios {
		want = append(want, s+"/"+catalog.DefaultWorkload)
	}
	if !slices.Equal(quick, want) {
		t.Errorf("quick cells %v, want %v", quick, want)
	}
	if len(full) <= len(m.QuickScenarios) {
		t.Errorf("full matrix cells %v: want every scenario that applies", full)
	}
}
