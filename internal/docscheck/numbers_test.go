// Package docscheck holds tests that read the user docs: a figure that a
// benchmark run produced is written once, in docs/performance.md's table
// of the run, and every other page that quotes it must agree with it.
package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section is the text of doc from heading to the next heading of its level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no %q heading: update this test", heading)
	}
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if i := strings.Index(rest, "\n"+level); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

var (
	rateRe  = regexp.MustCompile(`(\d{1,3}(?:,\d{3})+|\d+)(?: acquire\+release pairs| pairs)?/s\b`)
	ratioRe = regexp.MustCompile(`(\d+\.\d+)×`)
	numRe   = regexp.MustCompile(`\d{1,3}(?:,\d{3})+|\d+`)
	allocRe = regexp.MustCompile(`(\d+) (?:allocs|allocations)\b|instead of (\d+)\b`)
)

// all returns the first non-empty group of every match of re in s (the
// match itself when re has no group).
func all(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		if len(m) == 1 {
			out = append(out, m[0])
			continue
		}
		for _, g := range m[1:] {
			if g != "" {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// The bench figures other pages quote (rates, the fencing ratio,
// allocations per Lock+Unlock) are the ones of performance.md's run: a page
// that quotes another run's 0.89× beside performance.md's 0.96× fails.
func TestBenchFiguresMatchPerformancePage(t *testing.T) {
	run := section(t, read(t, "docs/performance.md"), "## The current numbers")
	// The table gives most rates without "/s" ("raw 11,924 (0.96×)"):
	// every number in it counts.
	rates, allocs := all(numRe, run), all(allocRe, run)
	var fencing []string
	for _, line := range strings.Split(run, "\n") {
		if strings.HasPrefix(line, "| fencing on ÷ off") {
			fencing = all(ratioRe, line)
		}
	}
	if len(rates) < 10 || len(allocs) < 2 || len(fencing) < 2 {
		t.Fatalf("performance.md's table gave %d rates, %d allocation counts, fencing ratios %q: update this test", len(rates), len(allocs), fencing)
	}

	for _, c := range []struct {
		page string
		// only: the lines of the page to check (all when empty).
		only   string
		rates  bool
		ratios bool // every ratio on those lines is a fencing ratio of the run
	}{
		{page: "docs/defaults.md", only: "**fencing tokens on**", ratios: true},
		{page: "docs/safety.md", only: "fenced ÷ unfenced", ratios: true},
		{page: "docs/operations.md", rates: true},
		{page: "README.md", rates: true},
		{page: "docs/choosing.md"},
	} {
		doc := read(t, c.page)
		text := doc
		if c.only != "" {
			// The paragraph that holds it, or its line in a table.
			i := strings.Index(doc, c.only)
			if i < 0 {
				t.Errorf("%s: no %q: update this test", c.page, c.only)
				continue
			}
			sep := "\n\n"
			if start := strings.LastIndexByte(doc[:i], '\n') + 1; strings.HasPrefix(doc[start:], "|") {
				sep = "\n"
			}
			start := strings.LastIndex(doc[:i], sep) + len(sep)
			end := strings.Index(doc[i:], sep)
			if end < 0 {
				end = len(doc) - i
			}
			text = doc[start : i+end]
		}
		if c.ratios {
			for _, r := range all(ratioRe, text) {
				if !slices.Contains(fencing, r) {
					t.Errorf("%s: fenced ÷ unfenced %s×, performance.md's run says %q", c.page, r, fencing)
				}
			}
		}
		if c.rates {
			for _, r := range all(rateRe, text) {
				if !slices.Contains(rates, r) {
					t.Errorf("%s: %s/s is no rate of performance.md's run", c.page, r)
				}
			}
		}
		for _, a := range all(allocRe, text) {
			if !slices.Contains(allocs, a) {
				t.Errorf("%s: %s allocations is no count of performance.md's run (%q)", c.page, a, allocs)
			}
		}
	}
}
