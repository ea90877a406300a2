package matrix_test

import (
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
	var o matrix.Options
	o.Quick, o.Parallel = true, 1
	cfg, err := o.Config(matrix.Modes, matrix.Scenarios)
	if err != nil {
		t.Fatal(err)
	}
	quick := len(matrix.CellsOf(cfg.Modes, cfg.Scenarios, cfg.Workloads, cfg.QuickWorkloads))
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
	if regexp.MustCompile(`all \d+ were killed`).MatchString(page) {
		t.Error(`chaos-matrix.md: "all N were killed" is a past run's count; give the list's count`)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
