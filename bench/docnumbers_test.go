package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The committed results the docs quote: the names and nodes cases' JSON
// (-json) and the soak's (./soak -json).
const (
	namesResults = "results/names.json"
	nodesResults = "results/nodes.json"
	soakResults  = "results/soak.json"
)

func decodeFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// docSection is the text of a page of docs/ from heading to the next
// heading of its level.
func docSection(t *testing.T, page, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", page))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/%s has no %q heading: update this test", page, heading)
	}
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if i := strings.Index(rest, "\n"+level); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// figureRe finds a figure with its unit in a table line.
var figureRe = regexp.MustCompile(`(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?) ?(GB|MB|B|µs|s|×)(?:\W|$)`)

// checkFigures fails for every figure of want missing from text, and for
// every figure with a unit on text's table lines that is not among want:
// a figure of another run beside this run's fails.
func checkFigures(t *testing.T, where, text string, want []string) {
	t.Helper()
	flat := strings.Join(strings.Fields(text), " ") // lines wrap anywhere
	for _, w := range want {
		if !strings.Contains(flat, w) {
			t.Errorf("%s: no %q (the committed results say so)", where, w)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		for _, m := range figureRe.FindAllStringSubmatch(line, -1) {
			fig := m[1] + " " + m[2]
			if m[2] == "×" {
				fig = m[1] + "×"
			}
			if !slices.ContainsFunc(want, func(w string) bool { return strings.Contains(w, fig) }) {
				t.Errorf("%s: %q is no figure of the committed results (line %q)", where, fig, line)
			}
		}
	}
}

// docs/scaling.md's sizing table quotes the largest row of the names case
// and the slopes of the nodes case.
func TestScalingDocMatchesResults(t *testing.T) {
	names, nodes := readJSON(t, namesResults), readJSON(t, nodesResults)
	if len(names.Names) < 3 || len(nodes.Nodes) < 5 {
		t.Fatalf("%s has %d rows, %s %d: want 10³…10⁵ names and N = 1…9", namesResults, len(names.Names), nodesResults, len(nodes.Nodes))
	}
	a, z := names.Names[0], names.Names[len(names.Names)-1]
	var ns, p50, cpu, gap []float64
	for _, r := range nodes.Nodes {
		ns, p50, cpu, gap = append(ns, float64(r.Nodes)), append(p50, r.OneP50us), append(cpu, r.ManyCPUus), append(gap, r.GapP50us)
	}
	want := []string{
		fmt.Sprintf("%.0f B of Redis memory per held lock", z.HeldBytes),
		fmt.Sprintf("(redislock: %.0f B, %.2f×)", z.RedislockBytes, z.HeldBytes/z.RedislockBytes),
		fmt.Sprintf("a million held locks: %.0f MB per node", z.HeldBytes),
		fmt.Sprintf("%.0f B per name on each node for its fencing counter", z.CounterBytes),
		fmt.Sprintf("%s B of Go heap per lease: %s leases take %.0f MB", commas(int64(math.Round(z.ClientBytes))), commas(int64(z.Names)), z.ClientBytes*float64(z.Names)/1e6),
		fmt.Sprintf("p50 %.0f µs with %s names held, %.0f µs with %s (%.2f×)", z.LockP50us, commas(int64(z.Names)), a.LockP50us, commas(int64(a.Names)), z.LockP50us/a.LockP50us),
		fmt.Sprintf("its first page (%s locks) in %.1f s", commas(cliPage), z.CLIPage.Seconds),
		fmt.Sprintf("all %s with `--limit 0` in %.1f s, in %.0f MB of memory (%.0f MB at %s names)", commas(int64(z.Names)), z.CLI.Seconds, z.CLI.PeakMB, a.CLI.PeakMB, commas(int64(a.Names))),
		fmt.Sprintf("the console's first page (%d locks) in %.2f s", consolePage, z.Console.Seconds),
		fmt.Sprintf("%s µs of CPU (client and servers) per Lock+Unlock, %.0f µs on a lone Lock+Unlock and %.0f µs on a hand-off",
			fmt.Sprintf("%.0f", slope(ns, cpu)), slope(ns, p50), slope(ns, gap)),
	}
	if z.Names < 1000000 {
		// The million-name form, from the cost per lease.
		want = append(want, fmt.Sprintf("about %.1f GB for the bench's own leases", z.ClientBytes*1e6/1e9))
	}
	if z.CLI.Err != "" || z.CLIPage.Err != "" || z.Console.Err != "" {
		t.Fatalf("a listing of %s names failed: the page's listing row needs rewriting", commas(int64(z.Names)))
	}
	checkFigures(t, "docs/scaling.md", docSection(t, "scaling.md", "## What to expect: names, nodes, waiting processes"), want)
}

type soakCheck struct {
	What  string  `json:"what"`
	Ref   float64 `json:"at_reference"`
	End   float64 `json:"at_end"`
	Limit float64 `json:"limit"`
}

// docs/performance.md's long run quotes the committed soak.
func TestSoakDocMatchesResults(t *testing.T) {
	var soak struct {
		Duration string    `json:"duration"`
		Restarts []float64 `json:"restarts_at_s"`
		Samples  []struct {
			At   float64 `json:"at_s"`
			Heap float64 `json:"heap_inuse_mb"`
		} `json:"samples"`
		Kinds map[string]struct {
			Acquired, Refused, Errors int64
		} `json:"kinds"`
		Checks         []soakCheck `json:"checks"`
		GoroutinesLeft int         `json:"goroutines_left_after_close"`
		KeysNoTTL      int         `json:"keys_without_ttl_after_close"`
		Pass           bool        `json:"pass"`
	}
	decodeFile(t, soakResults, &soak)
	if !soak.Pass || len(soak.Checks) < 4 {
		t.Fatalf("%s: pass %v, %d checks: the page shows a passing run", soakResults, soak.Pass, len(soak.Checks))
	}
	minutes := strings.TrimSuffix(strings.SplitN(soak.Duration, "m", 2)[0], "h")
	var acq, errs, refused int64
	for _, k := range soak.Kinds {
		acq += k.Acquired
		errs += k.Errors
		refused += k.Refused
	}
	lo, hi := math.Inf(1), 0.0
	for _, s := range soak.Samples {
		if s.At > 60 {
			lo, hi = min(lo, s.Heap), max(hi, s.Heap)
		}
	}
	want := []string{
		fmt.Sprintf("One %s-minute run, %d node restarts", minutes, len(soak.Restarts)),
		fmt.Sprintf("After Close: %d goroutines left, %d keys without a TTL", soak.GoroutinesLeft, soak.KeysNoTTL),
		fmt.Sprintf("%s acquisitions; %s errors", commas(acq), commas(errs)),
		fmt.Sprintf("%s TryLocks refused", commas(refused)),
		fmt.Sprintf("between %.0f and %.0f MB", math.Floor(lo/5)*5, math.Ceil(hi/5)*5),
	}
	rows := []struct {
		check, label, format string
	}{
		{"client RSS", "| client RSS |", "%.1f MB"},
		{"client goroutines", "| client goroutines |", "%.1f"},
		{"keys per node", "| keys per node (most of any node) |", "%.0f"},
		{"client open sockets", "| client open sockets (at the end: the most of the run) |", "%.1f"},
	}
	for _, r := range rows {
		i := slices.IndexFunc(soak.Checks, func(c soakCheck) bool { return strings.HasPrefix(c.What, r.check) })
		if i < 0 {
			t.Errorf("%s: no %q check", soakResults, r.check)
			continue
		}
		c := soak.Checks[i]
		f := func(v float64) string { return fmt.Sprintf(r.format, v) }
		want = append(want, fmt.Sprintf("%s %s | %s | %s |", r.label, f(c.Ref), f(c.End), f(c.Limit)))
	}
	checkFigures(t, "docs/performance.md", docSection(t, "performance.md", "## A long run"), want)
}

// docs/defaults.md's memory per name is the names case's counter cost at
// its largest row.
func TestDefaultsDocMatchesResults(t *testing.T) {
	names := readJSON(t, namesResults)
	if len(names.Names) == 0 {
		t.Fatalf("%s has no rows", namesResults)
	}
	z := names.Names[len(names.Names)-1]
	checkFigures(t, "docs/defaults.md", docSection(t, "defaults.md", "## Fencing counters: retention against memory"), []string{
		fmt.Sprintf("after %s distinct names were locked and released", commas(int64(z.Names))),
		fmt.Sprintf("**%.0f B per name**", z.CounterBytes),
		fmt.Sprintf("**1,000,000 names: ~%.0f MB per node**", z.CounterBytes),
	})
}
