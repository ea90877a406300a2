package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
)

//go:embed page.html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Parse(pageSource))

type rowView struct {
	N int
	Row
	Expected      string
	VerdictClass  string
	Avail         string
	P50, P99      string
	ViolationCell []countCell
	SVG           *svgView
}

type countCell struct {
	N   int
	Bad bool
}

type sectionView struct {
	Scenario string
	Rows     []rowView
}

type pageView struct {
	Title    string
	Seed     int64
	Modes    []string
	Grid     []gridRow
	Rows     []rowView
	Sections []sectionView
	Sources  []Source
	// SVGDir, when set, is where the timelines are, one file per row
	// (cell-N.svg), loaded lazily; otherwise they are inline.
	SVGDir string
}

type gridRow struct {
	Scenario string
	Cells    []gridCell
}

type gridCell struct {
	N                    int // 0: the scenario does not apply
	Symbol, Class, Title string
	// Sub is the small print under the symbol: the fault events, and k/n
	// seeds that reproduced an expected-unsafe cell.
	Sub string
}

// GridMark is the row's symbol in the summary grid: ✓ expected safe and held,
// ? too few contested acquisitions to say, ✗ expected unsafe and
// reproduced, ○ not reproduced, ‼ a failure, n/a nothing to judge. The
// verdict grid of docs/chaos-matrix.md uses it too.
func GridMark(r Row) string {
	sym, _ := symbol(r)
	return sym
}

// symbol draws a row in the summary grid. "Not reproduced" (an unsafe
// expectation without violation) is not drawn as a refutation.
func symbol(r Row) (sym, class string) {
	switch {
	case r.Verdict == Inconclusive:
		return "?", "inconclusive"
	case r.Verdict == NotApplicable:
		return "n/a", "notrepro"
	case r.ExpectedSafe && r.Verdict == Reproduced && r.Broken == "" && r.KeysWithoutExpiry == 0:
		return "✓", "safe"
	case r.ExpectedSafe || r.Broken != "" || r.KeysWithoutExpiry > 0:
		return "‼", "failure"
	case r.Verdict == Reproduced:
		return "✗", "unsafe"
	}
	return "○", "notrepro"
}

// WriteHTML writes a self-contained HTML page (no scripts, no external
// assets): the summary table, then per scenario each mode's verdict, claim
// and, where the row has a Timeline, an inline SVG timeline.
func (m Matrix) WriteHTML(w io.Writer) error {
	pv := pageView{Title: "quorumlock — lock safety matrix", Seed: m.Seed,
		Sources: []Source{Kleppmann, RedlockSpec, Antirez, JepsenEtcd}}
	index := map[string]int{}
	for i, r := range m.Results {
		rv := rowView{
			N: i + 1, Row: r,
			Expected:     map[bool]string{true: "safe", false: "unsafe"}[r.ExpectedSafe],
			VerdictClass: string(r.Verdict),
			Avail:        fmt.Sprintf("%.3f", r.Availability),
			P50:          fmt.Sprintf("%.2f", r.AcquireP50Ms),
			P99:          fmt.Sprintf("%.2f", r.AcquireP99Ms),
		}
		for _, n := range []int{r.Violations, r.ValidOverlaps, r.LostUpdates, r.StaleAccepted} {
			rv.ViolationCell = append(rv.ViolationCell, countCell{N: n, Bad: n > 0})
		}
		if r.Timeline != nil {
			v := r.Timeline.view()
			rv.SVG = &v
		}
		pv.Rows = append(pv.Rows, rv)
		k, ok := index[r.Scenario]
		if !ok {
			k = len(pv.Sections)
			index[r.Scenario] = k
			pv.Sections = append(pv.Sections, sectionView{Scenario: r.Scenario})
		}
		pv.Sections[k].Rows = append(pv.Sections[k].Rows, rv)
	}
	index = map[string]int{}
	cells := map[[2]string]int{}
	for i, r := range m.Results {
		if _, ok := index[r.Mode]; !ok {
			index[r.Mode] = len(pv.Modes)
			pv.Modes = append(pv.Modes, r.Mode)
		}
		cells[[2]string{r.Scenario, r.Mode}] = i
	}
	for _, sec := range pv.Sections {
		g := gridRow{Scenario: sec.Scenario}
		for _, mode := range pv.Modes {
			i, ok := cells[[2]string{sec.Scenario, mode}]
			if !ok {
				g.Cells = append(g.Cells, gridCell{})
				continue
			}
			r := m.Results[i]
			sym, class := symbol(r)
			sub := fmt.Sprintf("%d ev", r.FaultEvents)
			if k := r.SeedsCell(); k != "" {
				sub += " · " + k
			}
			g.Cells = append(g.Cells, gridCell{N: i + 1, Symbol: sym, Class: class, Sub: sub,
				Title: fmt.Sprintf("%s × %s: %s — %s (%d fault events, %d contested acquisitions%s)",
					r.Mode, r.Scenario, r.Verdict, r.VerdictNote, r.FaultEvents, r.Contested, seedsNote(r))})
		}
		pv.Grid = append(pv.Grid, g)
	}
	pv.SVGDir = m.svgDir
	return pageTemplate.Execute(w, pv)
}

// WriteHTMLFile writes the page to file and each timeline to its own SVG
// file in file's directory, under "<file name>-timelines/": the page loads
// them lazily, as they scroll into view, instead of carrying megabytes of
// inline SVG.
func (m Matrix) WriteHTMLFile(file string) error {
	dirName := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)) + "-timelines"
	dir := filepath.Join(filepath.Dir(file), dirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, r := range m.Results {
		if r.Timeline == nil {
			continue
		}
		v := r.Timeline.view()
		var b bytes.Buffer
		if err := pageTemplate.ExecuteTemplate(&b, "svg", v); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("cell-%d.svg", i+1)), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	m.svgDir = dirName
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := m.WriteHTML(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func seedsNote(r Row) string {
	if k := r.SeedsCell(); k != "" {
		return "; reproduced in " + k + " seeds"
	}
	return ""
}
