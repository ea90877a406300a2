package report

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// MarkKind classifies a write drawn on the timeline.
type MarkKind string

const (
	MarkAccepted MarkKind = "accepted"
	MarkRejected MarkKind = "rejected" // fenced off
	MarkStale    MarkKind = "stale"    // accepted although stale
	MarkLost     MarkKind = "lost"     // accepted, overwrote someone's update
)

// Mark is one write on the timeline.
type Mark struct {
	Worker int
	At     time.Duration
	Op     history.OpID
	Kind   MarkKind
}

// Timeline is what the HTML page draws for one row: per worker, its
// tenures as bars (the part after the lease's validity deadline lighter),
// the overlaps between workers' tenures in red, its writes as ticks, and
// the nemesis' fault windows as shaded bands.
type Timeline struct {
	End      time.Duration
	Workers  []int
	Tenures  []checker.Tenure
	Overlaps []checker.Overlap
	Faults   []checker.Window
	Marks    []Mark
}

// NewTimeline derives a timeline from a history. It runs the checker's
// cheap checks (no porcupine) with no cap on examples, so every stale and
// lost write is marked.
func NewTimeline(h history.History) *Timeline {
	rep := checker.Check(h, checker.WithoutLinearizability(), checker.WithMaxExamples(math.MaxInt))
	tl := &Timeline{End: h.End(), Workers: h.Workers(), Faults: checker.Windows(h)}
	tl.Tenures = checker.Tenures(h)
	tl.Overlaps = checker.Overlaps(tl.Tenures, false)
	// The offending write is the last op of each example.
	bad := map[history.OpID]MarkKind{}
	for _, ex := range rep.LostUpdates.Examples {
		bad[ex.Ops[len(ex.Ops)-1]] = MarkLost
	}
	for _, ex := range rep.StaleAccepted.Examples {
		bad[ex.Ops[len(ex.Ops)-1]] = MarkStale // stale wins over lost: it names the cause
	}
	for _, o := range h.Ops {
		if o.Kind != history.Write || !o.Returned() {
			continue
		}
		m := Mark{Worker: o.Worker, At: o.Invoke, Op: o.ID, Kind: MarkAccepted}
		switch {
		case o.Rejected():
			m.Kind = MarkRejected
		case !o.Accepted():
			continue
		case bad[o.ID] != "":
			m.Kind = bad[o.ID]
		}
		tl.Marks = append(tl.Marks, m)
	}
	return tl
}

// Geometry of the drawing, in SVG user units.
const (
	svgLeft   = 70.0
	svgRight  = 16.0
	svgPlotW  = 1000.0
	svgTop    = 30.0
	svgLaneH  = 26.0
	svgBarH   = 14.0
	svgAxisH  = 30.0
	svgMarkH  = 6.0
	svgMinBar = 1.5
	// svgLabelCharW is about the width of a character of a fault label
	// (10px font), to tell when two labels would print over each other.
	svgLabelCharW = 5.5
)

// The shapes handed to the template; numbers are preformatted.
type (
	svgRect struct {
		X, Y, W, H string
		Class      string
		Title      string
	}
	svgText struct {
		X, Y  string
		Text  string
		Class string
	}
	svgLine struct {
		X1, Y1, X2, Y2 string
		Class          string
		Title          string
	}
	svgView struct {
		Width, Height string
		Lanes         []svgRect
		Labels        []svgText
		Faults        []svgRect
		FaultLabels   []svgText
		Bars          []svgRect
		Overlaps      []svgRect
		Marks         []svgLine
		Ticks         []svgLine
		TickLabels    []svgText
		Empty         bool
	}
)

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

// view lays the timeline out.
func (tl *Timeline) view() svgView {
	lanes := slices.Clone(tl.Workers)
	laneOf := map[int]int{}
	for i, w := range lanes {
		laneOf[w] = i
	}
	n := max(len(lanes), 1)
	plotH := float64(n) * svgLaneH
	v := svgView{
		Width:  f1(svgLeft + svgPlotW + svgRight),
		Height: f1(svgTop + plotH + svgAxisH),
		Empty:  len(lanes) == 0,
	}
	end := max(tl.End, 1)
	x := func(t time.Duration) float64 { return svgLeft + float64(t)/float64(end)*svgPlotW }
	laneY := func(w int) float64 { return svgTop + float64(laneOf[w])*svgLaneH }
	barY := func(w int) float64 { return laneY(w) + (svgLaneH-svgBarH)/2 }
	width := func(a, b time.Duration) float64 { return max(x(b)-x(a), svgMinBar) }

	for i, w := range lanes {
		cls := "lane"
		if i%2 == 1 {
			cls = "lane alt"
		}
		v.Lanes = append(v.Lanes, svgRect{X: f1(svgLeft), Y: f1(laneY(w)), W: f1(svgPlotW), H: f1(svgLaneH), Class: cls})
		v.Labels = append(v.Labels, svgText{X: f1(svgLeft - 8), Y: f1(laneY(w) + svgLaneH/2 + 4), Text: fmt.Sprintf("client %d", w), Class: "label"})
	}
	labelX := 0.0
	for _, f := range tl.Faults {
		title := fmt.Sprintf("%s: %v → %v", f.Name, f.Start, f.End)
		if !f.Healed {
			title += " (not healed)"
		}
		v.Faults = append(v.Faults, svgRect{X: f1(x(f.Start)), Y: f1(svgTop - 14), W: f1(width(f.Start, f.End)), H: f1(plotH + 14), Class: "fault", Title: title})
		// Faults that start together (a crash of several nodes) share one
		// label instead of printing over each other.
		if k := len(v.FaultLabels) - 1; k >= 0 && x(f.Start)-labelX < svgLabelCharW*float64(len([]rune(v.FaultLabels[k].Text))+1) {
			v.FaultLabels[k].Text += ", " + f.Name
			continue
		}
		labelX = x(f.Start)
		v.FaultLabels = append(v.FaultLabels, svgText{X: f1(labelX + 3), Y: f1(svgTop - 4), Text: f.Name, Class: "fault-label"})
	}
	inOverlap := map[history.OpID]bool{}
	for _, o := range tl.Overlaps {
		inOverlap[o.A.Lease], inOverlap[o.B.Lease] = true, true
	}
	for _, t := range tl.Tenures {
		cls := "tenure"
		if inOverlap[t.Lease] {
			cls = "tenure violation"
		}
		title := fmt.Sprintf("client %d, lease #%d, token %d: %v → %v", t.Worker, t.Lease, t.Token, t.Start, t.End)
		if t.ValidUntil != 0 {
			title += fmt.Sprintf(", valid until %v", t.ValidUntil)
		}
		if !t.Released {
			title += ", no release recorded"
		}
		validEnd := max(t.ValidEnd(), t.Start)
		// The valid part solid, the part after the deadline lighter.
		v.Bars = append(v.Bars, svgRect{X: f1(x(t.Start)), Y: f1(barY(t.Worker)), W: f1(width(t.Start, t.End)), H: f1(svgBarH), Class: cls, Title: title})
		if validEnd < t.End {
			v.Bars = append(v.Bars, svgRect{X: f1(x(validEnd)), Y: f1(barY(t.Worker)), W: f1(width(validEnd, t.End)), H: f1(svgBarH), Class: "expired", Title: title + " (expired part)"})
		}
	}
	for _, o := range tl.Overlaps {
		title := fmt.Sprintf("overlap: client %d (lease #%d) and client %d (lease #%d), %v → %v", o.A.Worker, o.A.Lease, o.B.Worker, o.B.Lease, o.From, o.To)
		for _, w := range []int{o.A.Worker, o.B.Worker} {
			v.Overlaps = append(v.Overlaps, svgRect{X: f1(x(o.From)), Y: f1(barY(w) - 2), W: f1(width(o.From, o.To)), H: f1(svgBarH + 4), Class: "overlap", Title: title})
		}
	}
	for _, m := range tl.Marks {
		if _, ok := laneOf[m.Worker]; !ok {
			continue
		}
		y := barY(m.Worker) + svgBarH
		v.Marks = append(v.Marks, svgLine{X1: f1(x(m.At)), Y1: f1(y - svgBarH - 2), X2: f1(x(m.At)), Y2: f1(y + svgMarkH),
			Class: "mark " + string(m.Kind), Title: fmt.Sprintf("write #%d by client %d at %v: %s", m.Op, m.Worker, m.At, m.Kind)})
	}
	step := niceStep(end)
	axisY := svgTop + plotH
	for t := time.Duration(0); t <= end; t += step {
		v.Ticks = append(v.Ticks, svgLine{X1: f1(x(t)), Y1: f1(axisY), X2: f1(x(t)), Y2: f1(axisY + 5), Class: "tick"})
		v.TickLabels = append(v.TickLabels, svgText{X: f1(x(t)), Y: f1(axisY + 18), Text: fmtMs(t), Class: "tick-label"})
	}
	return v
}

// niceStep picks a 1-2-5 step giving at most about ten ticks over end.
func niceStep(end time.Duration) time.Duration {
	raw := float64(end) / 10
	if raw <= 1 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return time.Duration(m * mag)
		}
	}
	return time.Duration(10 * mag)
}

func fmtMs(t time.Duration) string {
	ms := float64(t) / float64(time.Millisecond)
	switch {
	case ms == 0:
		return "0"
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.3f ms", ms)
}
