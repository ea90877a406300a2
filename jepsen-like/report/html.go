package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
)

//go:embed page.html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Parse(pageSource))

type rowView struct {
	N int
	Result
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
	Rows     []rowView
	Sections []sectionView
	Sources  []Source
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
			N: i + 1, Result: r,
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
	return pageTemplate.Execute(w, pv)
}
