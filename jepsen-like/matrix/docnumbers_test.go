package matrix_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/matrix"
	"github.com/quorumlock/quorumlock/jepsen-like/mutants"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
)

// readDoc reads a page of the repository's docs (path from the root).
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var numberWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
	"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
	"thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
	"eighteen": 18, "nineteen": 19, "twenty": 20}

// number reads "19", "nineteen" or "twenty-three".
func number(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, true
	}
	s = strings.ToLower(s)
	if n, ok := numberWords[s]; ok {
		return n, true
	}
	if tens, unit, ok := strings.Cut(s, "-"); ok && tens == "twenty" {
		if u, ok := numberWords[unit]; ok && u < 10 {
			return 20 + u, true
		}
	}
	return 0, false
}

// tableIDs lists the first-column `ids` of the Markdown table that follows
// heading in doc.
func tableIDs(doc, heading string) []string {
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		return nil
	}
	var ids []string
	started := false
	for _, line := range strings.Split(rest, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| `") {
			if started && !strings.HasPrefix(line, "|") {
				break
			}
			continue
		}
		started = true
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, id := range strings.Split(cell, ", ") {
			ids = append(ids, strings.Trim(id, "`"))
		}
	}
	return ids
}

func ids[T any](xs []T, id func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, id(x))
	}
	slices.Sort(out)
	return out
}

// The counts the docs give of the matrix (modes, scenarios, cells of the
// quick run, mutants) are the catalog's: a page that says "nineteen
// scenarios" over a catalog of 23 fails here.
func TestDocNumbersMatchTheCatalog(t *testing.T) {
	page := readDoc(t, "docs/chaos-matrix.md")
	choosing := readDoc(t, "docs/choosing.md")

	modes := ids(matrix.Modes, func(m catalog.Mode) string { return m.ID })
	scenarios := ids(matrix.Scenarios, func(s catalog.Scenario) string { return s.ID })

	// "against eight lock configurations under twenty-three fault scenarios"
	m := regexp.MustCompile(`against ([\w-]+) lock configurations\s+under ([\w-]+) fault scenarios`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal(`chaos-matrix.md no longer says "against N lock configurations under M fault scenarios": update this test`)
	}
	if n, ok := number(m[1]); !ok || n != len(modes) {
		t.Errorf("chaos-matrix.md: %q lock configurations, the catalog has %d modes", m[1], len(modes))
	}
	if n, ok := number(m[2]); !ok || n != len(scenarios) {
		t.Errorf("chaos-matrix.md: %q fault scenarios, the catalog has %d", m[2], len(scenarios))
	}
	if got := tableIDs(page, "## Modes"); !slices.Equal(sorted(got), modes) {
		t.Errorf("chaos-matrix.md's modes table lists %q, the catalog %q", sorted(got), modes)
	}
	if got := tableIDs(page, "## Scenarios"); !slices.Equal(sorted(got), scenarios) {
		t.Errorf("chaos-matrix.md's scenarios table lists %q, the catalog %q", sorted(got), scenarios)
	}

	// The cells of `--quick` (every mode × scenario plus the workloads'
	// quick forms), as `chaos --quick --list` counts them.
	quick := len(quickCells(t))
	for _, c := range []struct {
		page, text string
		re         *regexp.Regexp
	}{
		{"chaos-matrix.md", page, regexp.MustCompile(`chaos --quick [^\n]*# (\d+) cells`)},
		{"choosing.md", choosing, regexp.MustCompile(`quorumlock-lab chaos` + "`" + ` \((\d+)\s+cells with ` + "`--quick`")},
	} {
		ms := c.re.FindAllStringSubmatch(c.text, -1)
		if len(ms) == 0 {
			t.Errorf("%s: no count of the quick run's cells (%v): update this test", c.page, c.re)
		}
		for _, mm := range ms {
			if n, _ := strconv.Atoi(mm[1]); n != quick {
				t.Errorf("%s: %q: `chaos --quick` runs %d cells", c.page, mm[0], quick)
			}
		}
	}

	// Mutants: any "N mutants" on the page is the list's length.
	for _, mm := range regexp.MustCompile(`(?i)\b([\w-]+) (?:deliberate bugs|mutants)\b`).FindAllStringSubmatch(page, -1) {
		if n, ok := number(mm[1]); ok && n != len(mutants.List) {
			t.Errorf("chaos-matrix.md: %q, the list has %d mutants", mm[0], len(mutants.List))
		}
	}
	// The coverage table: the mutex workload makes way on the pairs where
	// a lock kind's workload runs.
	mutex := catalog.Workloads[slices.IndexFunc(catalog.Workloads, func(w catalog.Workload) bool { return w.ID == catalog.DefaultWorkload })]
	if mm := regexp.MustCompile(`but the (\d+) pairs where a kind's workload`).FindStringSubmatch(page); mm == nil {
		t.Error("chaos-matrix.md no longer counts the pairs the mutex workload leaves to the kinds: update this test")
	} else if n, _ := strconv.Atoi(mm[1]); n != len(mutex.QuickCovered) {
		t.Errorf("chaos-matrix.md: %q, the catalog leaves %d pairs to the kinds", mm[0], len(mutex.QuickCovered))
	}
	if regexp.MustCompile(`all \d+ were killed`).MatchString(page) {
		t.Error(`chaos-matrix.md: "all N were killed" is a past run's count; give the list's count`)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// matrixRun is the committed result of a `chaos --quick` run that
// docs/chaos-matrix.md's verdicts are generated from.
const matrixRun = "docs/results/matrix-quick.json"

var updateDocs = flag.Bool("update", false, "rewrite the generated blocks of docs/chaos-matrix.md from the committed runs")

// The markers around the generated verdicts in docs/chaos-matrix.md.
const (
	verdictsBegin = "<!-- verdicts: generated from " + matrixRun + " by go test ./jepsen-like/matrix -run TestDocVerdicts -update -->\n"
	verdictsEnd   = "<!-- end of the generated verdicts -->\n"
)

// verdicts renders the run as the page shows it: the counts of each mark,
// the mutex workload's grid (scenarios × modes) and the lock kinds' cells.
func verdicts(m report.Matrix) string {
	counts := map[string]int{}
	for _, r := range m.Results {
		counts[report.GridMark(r)]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The committed `--quick` run (`%s`, seed %d): %d cells;", matrixRun, m.Seed, len(m.Results))
	for i, mark := range []string{"✓", "?", "✗", "○", "‼", "n/a"} {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %d %s", sep, counts[mark], mark)
	}
	b.WriteString(".")
	for _, r := range m.Results {
		if report.GridMark(r) == "‼" {
			why := r.Broken
			if why == "" {
				why = r.VerdictNote
			}
			fmt.Fprintf(&b, " ‼ %s × %s: %s.", r.Mode, r.Scenario, why)
		}
	}
	b.WriteString("\n\n")
	b.WriteString(grid(m.Results, func(r report.Row) string {
		mark := report.GridMark(r)
		if mark == "✗" {
			mark += fmt.Sprintf(" %d/%d/%d", r.Violations, r.LostUpdates, r.StaleAccepted)
		}
		return mark
	}))
	return b.String()
}

// grid draws rows as the page does: the mutex workload's cells as a table
// of scenarios × modes (the modes and scenarios that have a cell, in the
// catalog's order), then each lock kind's cells on a line of their own;
// mark is what a cell shows.
func grid(rows []report.Row, mark func(report.Row) string) string {
	type key struct{ mode, scenario string }
	marks := map[key]string{}
	var kinds []string
	kindCells := map[string][]string{}
	for _, r := range rows {
		if mode, kind, ok := strings.Cut(r.Mode, "/"); ok {
			if _, seen := kindCells[kind]; !seen {
				kinds = append(kinds, kind)
			}
			kindCells[kind] = append(kindCells[kind], mode+" × "+r.Scenario+" "+mark(r))
			continue
		}
		marks[key{r.Mode, r.Scenario}] = mark(r)
	}

	var b strings.Builder
	b.WriteString("| scenario |")
	var modes []string
	for _, md := range matrix.Modes {
		for k := range marks {
			if k.mode == md.ID {
				modes = append(modes, md.ID)
				b.WriteString(" " + md.ID + " |")
				break
			}
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(modes)) + "\n")
	for _, s := range matrix.Scenarios {
		row := "| " + s.ID + " |"
		any := false
		for _, md := range modes {
			mark, ok := marks[key{md, s.ID}]
			if !ok {
				mark = "–"
			}
			any = any || ok
			row += " " + mark + " |"
		}
		if any {
			b.WriteString(row + "\n")
		}
	}
	if len(kinds) > 0 {
		b.WriteString("\n| lock kind (workload) | its quick cells |\n|---|---|\n")
		for _, k := range kinds {
			fmt.Fprintf(&b, "| `%s` | %s |\n", k, strings.Join(kindCells[k], ", "))
		}
	}
	return b.String()
}

// The verdicts docs/chaos-matrix.md shows (cells, counts, grid) are those
// of the committed run, and that run is a quick run of the current
// catalog: a page edited by hand, a run committed without its page, or a
// catalog grown since the run all fail here. Only committed files are read.
func TestDocVerdictsMatchTheCommittedRun(t *testing.T) {
	m := readRun(t, matrixRun)
	checkCells(t, matrixRun, m, func(matrix.Cell) bool { return true }, "quorumlock-lab chaos --quick --json "+matrixRun)
	checkGenerated(t, verdictsBegin, verdictsEnd, verdicts(m), matrixRun, "TestDocVerdicts")
}

// checkGenerated compares the block between begin and end of
// docs/chaos-matrix.md with gen, rendered from the committed run source
// (test names the test whose -update rewrites the block), or writes gen
// there under -update.
func checkGenerated(t *testing.T, begin, end, gen, source, test string) {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "chaos-matrix.md")
	page := readDoc(t, "docs/chaos-matrix.md")
	before, rest, ok1 := strings.Cut(page, begin)
	block, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("chaos-matrix.md has no %q … %q block: update this test", begin, end)
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(before+begin+gen+end+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if block != gen {
		gl, wl := strings.Split(block, "\n"), strings.Split(gen, "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := line(gl, i), line(wl, i)
			if g != w {
				t.Errorf("chaos-matrix.md's block differs from %s (go test ./jepsen-like/matrix -run %s -update rewrites it); first difference, line %d:\n page: %s\n run:  %s", source, test, i+1, g, w)
				break
			}
		}
	}
}

// seedsRun is the committed result of `make chaos-seeds`: the quick
// matrix's expected-unsafe cells, each under several seeds.
const seedsRun = "docs/results/chaos-seeds.json"

// The markers around the generated k-of-n table in docs/chaos-matrix.md.
const (
	seedsBegin = "<!-- seeds: generated from " + seedsRun + " by go test ./jepsen-like/matrix -run TestDocSeeds -update -->\n"
	seedsEnd   = "<!-- end of the generated seeds -->\n"
)

// seedsTable renders a run over several seeds as the page shows it: how
// many cells reproduced under every seed, some or none, how many broke a
// judged property, then the grid of k/n. It fails on a row that did not
// run under the run's number of seeds.
func seedsTable(m report.Matrix) (string, error) {
	if len(m.Results) == 0 {
		return "", fmt.Errorf("no cell")
	}
	n := m.Results[0].Seeds
	every, some, none := 0, 0, 0
	var broken []string
	for _, r := range m.Results {
		if r.Seeds != n || n < 2 || r.ExpectedSafe {
			return "", fmt.Errorf("%s × %s ran under %d seeds (expected safe: %v), the first cell under %d", r.Mode, r.Scenario, r.Seeds, r.ExpectedSafe, n)
		}
		switch r.SeedsReproduced {
		case n:
			every++
		case 0:
			none++
		default:
			some++
		}
		if r.Broken != "" || r.KeysWithoutExpiry > 0 {
			broken = append(broken, "`"+r.Mode+" × "+r.Scenario+"`")
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The committed run (`%s`, seeds %d–%d): %d cells; %d reproduced their violation under every seed, %d under some, %d under none.",
		seedsRun, m.Seed, m.Seed+int64(n)-1, len(m.Results), every, some, none)
	if len(broken) == 0 {
		b.WriteString(" No run broke a judged property.\n\n")
	} else {
		fmt.Fprintf(&b, " ‼ broke a judged property under some seed (the JSON's `broken` says which, under which seed): %s.\n\n", strings.Join(broken, ", "))
	}
	b.WriteString(grid(m.Results, report.Row.SeedsCell))
	return b.String(), nil
}

// The k-of-n table docs/chaos-matrix.md shows is that of the committed
// run over several seeds, and that run covers exactly the quick matrix's
// expected-unsafe cells: a page edited by hand, a run committed without
// its page, or a catalog grown since fail here.
func TestDocSeedsMatchTheCommittedRun(t *testing.T) {
	m := readRun(t, seedsRun)
	checkCells(t, seedsRun, m, func(c matrix.Cell) bool { return !c.Expect().Safe }, "make chaos-seeds")
	gen, err := seedsTable(m)
	if err != nil {
		t.Fatalf("%s: %v", seedsRun, err)
	}
	checkGenerated(t, seedsBegin, seedsEnd, gen, seedsRun, "TestDocSeeds")
}

// readRun reads a committed matrix run (path from the repository's root).
func readRun(t *testing.T, path string) report.Matrix {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := report.ReadJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// quickCells are the cells `chaos --quick` runs.
func quickCells(t *testing.T) []matrix.Cell {
	t.Helper()
	var o matrix.Options
	o.Quick, o.Parallel = true, 1
	cfg, err := o.Config(matrix.Modes, matrix.Scenarios)
	if err != nil {
		t.Fatal(err)
	}
	return matrix.CellsOf(cfg.Modes, cfg.Scenarios, cfg.Workloads, cfg.QuickWorkloads)
}

// checkCells fails unless the run m (committed at path) holds exactly the
// quick matrix's cells that keep selects; again is the command that runs
// it anew.
func checkCells(t *testing.T, path string, m report.Matrix, keep func(matrix.Cell) bool, again string) {
	t.Helper()
	var want, got []string
	for _, c := range quickCells(t) {
		if keep(c) {
			want = append(want, c.String())
		}
	}
	for _, r := range m.Results {
		got = append(got, r.Mode+" × "+r.Scenario)
	}
	if !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("%s holds %d cells, the quick matrix has %d of them: run `%s` again\n only in the run: %q\n only in the matrix: %q",
			path, len(got), len(want), again, missing(got, want), missing(want, got))
	}
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}

// missing lists what of a is not in b.
func missing(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
