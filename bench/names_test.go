package main

import (
	"bytes"
	"strings"
	"testing"
)

// The many-names targets judge the largest row: memory against redislock's
// on that row, Lock latency against the smallest row, and both listings.
func TestNamesChecks(t *testing.T) {
	ok := Listing{Seconds: 1, PeakMB: 50, Listed: 100000}
	rows := []NamesRow{
		{Names: 1000, HeldBytes: 500, RedislockBytes: 100, LockP50us: 200, LockP99us: 1000, CLI: ok, CLIPage: ok, Console: ok},
		{Names: 100000, HeldBytes: 118, RedislockBytes: 100, LockP50us: 230, LockP99us: 1300,
			CLI: Listing{Seconds: 30, PeakMB: 101, Listed: 100000}, CLIPage: ok,
			Console: Listing{Seconds: 5, Err: "context deadline exceeded"}},
	}
	want := map[string]bool{
		"names: server memory per held lock at 100,000 names ÷ redislock's ≤ 1.20×":       true,
		"names: Lock p50 at 100,000 names ÷ at 1,000 ≤ 1.20×":                             true,
		"names: Lock p99 at 100,000 names ÷ at 1,000 ≤ 1.20×":                             false,
		"names: `quorumlock locks --match --limit 0` lists all 100,000 names":             true,
		"names: `quorumlock locks --match` lists its first page (1,000) of 100,000 names": true,
		"names: the console's /api/locks lists its first page (200) of 100,000 names":     false,
		"names: `quorumlock locks --limit 0` peak RSS at 100,000 names ÷ at 1,000 ≤ 2×":   false,
	}
	cs := namesChecks(rows)
	if len(cs) != len(want) {
		t.Fatalf("%d checks, want %d: %+v", len(cs), len(want), cs)
	}
	for _, c := range cs {
		pass, ok := want[c.Target]
		if !ok || pass != c.Pass {
			t.Errorf("%q: pass %v (%s); want known target passing %v", c.Target, c.Pass, c.Measured, pass)
		}
	}
	rows[1].HeldBytes = 121
	if c := namesChecks(rows)[0]; c.Pass {
		t.Errorf("1.21× redislock's memory passed: %+v", c)
	}
	if namesChecks(rows[:1]) != nil {
		t.Error("one row judged: the latency target needs two")
	}
	var b bytes.Buffer
	printNames(&b, rows)
	for _, s := range []string{"| 100,000 | 121 | 100 | 1.21 |", "note: 100,000 names: console: context deadline exceeded", "| MISS |"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
}

// -report prints the names table of a committed run, with its targets.
func TestNamesReport(t *testing.T) {
	var out, log bytes.Buffer
	if err := run([]string{"-report", namesResults}, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	rows := readJSON(t, namesResults).Names
	largest := commas(int64(rows[len(rows)-1].Names))
	for _, s := range []string{"## names: many distinct names held", "| 100,000 |", "names: server memory per held lock at " + largest + " names"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, out.String())
		}
	}
}
