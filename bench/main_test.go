package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A short run of a few cases writes the table and a JSON file with one
// result per case × implementation, the fields the issue names, and the
// targets; the frozen case resumes its nodes.
func TestRunWritesTableAndJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	var out, log bytes.Buffer
	err := run([]string{
		"-rounds", "1", "-dur", "30ms", "-handoff", "150ms", "-slow-rounds", "1",
		"-cases", `uncontended.*N=1, 1 goroutine$|handoff.*N=1,|frozen-3of5-trylock|fencing.*N=5, 1 goroutine`,
		"-impls", `^(quorumlock|quorumlock fencing|raw|redislock retry-5ms|redsync retry-5ms|redsync ctx-timeouts)$`,
		"-json", path,
	}, &out, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(out.String(), "## Targets") || !strings.Contains(out.String(), "| quorumlock |") {
		t.Fatalf("no table:\n%s", out.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Results []map[string]any `json:"results"`
		Targets []Check          `json:"targets"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range f.Results {
		for _, k := range []string{"case", "impl", "nodes", "goroutines", "ops_per_sec", "p50_us", "p99_us", "allocs_per_op"} {
			if _, ok := r[k]; !ok {
				t.Errorf("result %v lacks %q", r, k)
			}
		}
		if ops, _ := r["ops"].(float64); ops < 1 {
			t.Errorf("result %v has no ops", r)
		}
		if e, _ := r["errors"].(float64); e > 0 {
			t.Errorf("result %v had errors", r)
		}
		seen[r["case"].(string)+"/"+r["impl"].(string)] = true
	}
	for _, want := range []string{"uncontended/quorumlock", "uncontended/raw", "uncontended/redislock",
		"handoff/quorumlock", "handoff/redsync", "handoff-nohold/quorumlock",
		"frozen-3of5-trylock/quorumlock", "frozen-3of5-trylock/redsync", "fencing/quorumlock"} {
		if !seen[want] {
			t.Errorf("no result for %s (have %v)", want, seen)
		}
	}
	if len(f.Targets) == 0 {
		t.Error("no targets evaluated")
	}
	// -report prints the same report again from the JSON file alone.
	var again bytes.Buffer
	if err := run([]string{"-report", path}, &again, &log); err != nil {
		t.Fatal(err)
	}
	if again.String() != out.String() {
		t.Errorf("-report printed\n%s\nthe run printed\n%s", again.String(), out.String())
	}
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, []byte(`{"results": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-report", empty}, &again, &log); err == nil || !strings.Contains(err.Error(), "-report") {
		t.Errorf("-report of a file without results: %v", err)
	}
}
