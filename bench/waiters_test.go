package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Commands per hand-off: every command's calls between the two readings
// (script-internal ones included, under their own names), less the
// reading's own INFO calls, over the hand-offs; other counters ignored.
func TestCommandsPerOp(t *testing.T) {
	before := map[string]int64{"evalsha.calls": 100, "set.calls": 50, "info.calls": 7, "evalsha.usec": 900, "total_commands_processed": 1000}
	after := map[string]int64{"evalsha.calls": 140, "set.calls": 70, "publish.calls": 20, "info.calls": 9, "evalsha.usec": 5000, "total_commands_processed": 9999}
	total, by := commandsPerOp(before, after, 2, 20)
	if total != 4 {
		t.Errorf("total %v per op, want 4 ((40 evalsha + 20 set + 20 publish) / 20)", total)
	}
	want := map[string]float64{"evalsha": 2, "set": 1, "publish": 1}
	if len(by) != len(want) {
		t.Errorf("by command %v, want %v", by, want)
	}
	for k, v := range want {
		if by[k] != v {
			t.Errorf("%s: %v per op, want %v", k, by[k], v)
		}
	}
	// An INFO beyond the reading's own is the servers' work too.
	if total, by := commandsPerOp(before, after, 1, 20); total != 4.05 || by["info"] != 0.05 {
		t.Errorf("one own INFO: total %v, info %v; want 4.05, 0.05", total, by["info"])
	}
	if total, by := commandsPerOp(before, after, 2, 0); total != 0 || by != nil {
		t.Errorf("no ops: %v %v", total, by)
	}
}

// The herd targets compare the most clients run with one client, per kind
// and quorum size, and the fair lock's lone cost with the plain one's.
func TestWaiterChecks(t *testing.T) {
	rows := []WaiterRow{
		{Lock: kindMutex, Nodes: 5, Waiters: 1, PerSecond: 500, Commands: 15},
		{Lock: kindMutex, Nodes: 5, Waiters: 10, PerSecond: 300, Commands: 40, Fairness: 0.2},
		{Lock: kindMutex, Nodes: 5, Waiters: 100, PerSecond: 450, Commands: 44, Fairness: 0.6},
		{Lock: kindFair, Nodes: 5, Waiters: 1, PerSecond: 400, Commands: 31},
		{Lock: kindFair, Nodes: 5, Waiters: 10, PerSecond: 310, Commands: 100, Fairness: 0.9},
	}
	got := map[string]Check{}
	for _, c := range waiterChecks(rows) {
		got[c.Target] = c
	}
	for _, tc := range []struct {
		target string
		pass   bool
	}{
		{"Mutex N=5: server commands per hand-off at W=100 ≤ 3× W=1", true},
		{"Mutex N=5: hand-offs/s at W=100 ≥ 0.8× W=1", true},
		{"Mutex N=5: fairness min/max per client at W=100 ≥ 0.5 (the hand-off case's bar)", true},
		{"FairMutex N=5: server commands per hand-off at W=10 ≤ 3× W=1 (asked at W=100)", false},
		{"FairMutex N=5: hand-offs/s at W=10 ≥ 0.8× W=1 (asked at W=100)", false},
		{"N=5: FairMutex uncontended (W=1) server commands per acquisition ≤ 2× Mutex's", false},
	} {
		c, ok := got[tc.target]
		if !ok {
			t.Errorf("no target %q; have %v", tc.target, got)
			continue
		}
		if c.Pass != tc.pass {
			t.Errorf("%s: pass %v, want %v (%s)", tc.target, c.Pass, tc.pass, c.Measured)
		}
	}
	if c := got["Mutex N=5: server commands per hand-off at W=100 ≤ 3× W=1"]; !strings.HasPrefix(c.Measured, "2.93×") {
		t.Errorf("measured %q, want 44/15 = 2.93×", c.Measured)
	}
	if len(got) != 7 {
		t.Errorf("%d targets, want 7 (3 per kind, 1 fair-against-plain)", len(got))
	}
	if cs := waiterChecks(rows[1:3]); len(cs) != 0 {
		t.Errorf("targets without a W=1 row: %v", cs)
	}
}

// The cost per added node is the least-squares slope of the curve.
func TestSlope(t *testing.T) {
	ns := []float64{1, 3, 5, 7, 9}
	if s := slope(ns, []float64{110, 130, 150, 170, 190}); math.Abs(s-10) > 1e-9 {
		t.Errorf("a line of slope 10: %v", s)
	}
	if s := slope(ns, []float64{100, 125, 150, 170, 200}); math.Abs(s-12.25) > 1e-9 {
		t.Errorf("a noisy curve: %v, want 12.25", s)
	}
	if s := slope([]float64{5}, []float64{3}); s != 0 {
		t.Errorf("one point: %v", s)
	}
	if s := slope([]float64{5, 5}, []float64{3, 4}); s != 0 {
		t.Errorf("one N: %v", s)
	}
}

func TestParseCounts(t *testing.T) {
	if got, err := parseCounts("1, 10,100"); err != nil || len(got) != 3 || got[2] != 100 {
		t.Errorf("parseCounts: %v %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,x", "-3"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) accepted", bad)
		}
	}
}

// A short run of the waiting-clients case prints its table and open
// targets, runs every kind × quorum size × clients once,
// counts the servers' commands, keeps its open targets out of the bench's
// targets in the JSON file, and -report prints the same again.
func TestRunWaiters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	var out, log bytes.Buffer
	if err := run([]string{"-cases", "^waiters$", "-waiters", "1,3", "-waiters-dur", "300ms", "-json", path}, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, want := range []string{"## waiting clients", "| FairMutex | 5 | 3 |", "### Open targets", "Mutex N=5: server commands per hand-off at W=3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "## Targets") {
		t.Errorf("the bench's targets printed for a run without their cases:\n%s", out.String())
	}
	f := readJSON(t, path)
	if len(f.Waiters) != 8 {
		t.Fatalf("%d rows, want 8 (2 kinds × 2 quorum sizes × 2 client counts)", len(f.Waiters))
	}
	for _, r := range f.Waiters {
		// Errors are reported, not judged (a loaded machine can time out
		// an Unlock).
		if r.Handoffs < 1 || r.Commands < 1 || r.ByCommand["evalsha"] <= 0 {
			t.Errorf("row %+v: want hand-offs and server commands (scripts among them)", r)
		}
	}
	if len(f.OpenTargets) == 0 || len(f.Targets) != 0 {
		t.Errorf("open targets %d, bench targets %v; want the herd's apart from the bench's", len(f.OpenTargets), f.Targets)
	}
	var again bytes.Buffer
	if err := run([]string{"-report", path}, &again, &log); err != nil {
		t.Fatal(err)
	}
	if again.String() != out.String() {
		t.Errorf("-report printed\n%s\nthe run printed\n%s", again.String(), out.String())
	}
}

// A short run of the quorum-size curve has a row per size, measured, and
// the cost per added node.
func TestRunNodes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	var out, log bytes.Buffer
	if err := run([]string{"-cases", "^nodes$", "-rounds", "1", "-dur", "30ms", "-handoff", "150ms", "-json", path}, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(out.String(), "## nodes") || !strings.Contains(out.String(), "per added node") {
		t.Errorf("no curve in\n%s", out.String())
	}
	f := readJSON(t, path)
	if len(f.Nodes) != len(nodesCounts) {
		t.Fatalf("%d rows, want %d", len(f.Nodes), len(nodesCounts))
	}
	for i, r := range f.Nodes {
		// Errors are not judged: on a loaded machine a short run's Lock
		// can time out, and the table reports it.
		if r.Nodes != nodesCounts[i] || r.OnePerSec <= 0 || r.ManyPerSec <= 0 || r.GapP50us <= 0 {
			t.Errorf("row %+v: want N=%d measured", r, nodesCounts[i])
		}
	}
}

func readJSON(t *testing.T, path string) jsonFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f jsonFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}
