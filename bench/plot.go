package main

import (
	"fmt"
	"image/color"
	"slices"

	"github.com/quorumlock/quorumlock/bench/internal/pngplot"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// curveGoroutines are the x values of the curve.
var curveGoroutines = []int{1, 4, 16, 64, 256}

// palette gives each implementation one colour across the panels.
var palette = map[string]color.RGBA{
	"quorumlock":          {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"quorumlock fencing":  {R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	"raw":                 {R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	"redsync":             {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"redsync retry-5ms":   {R: 0xff, G: 0x98, B: 0x96, A: 0xff},
	"redislock retry-5ms": {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"rueidislock":         {R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	"rueidislock noloop":  {R: 0xc5, G: 0xb0, B: 0xd5, A: 0xff},
}

func label(r *CaseRow) string {
	if r.Variant == "default" {
		return r.Impl
	}
	return r.Impl + " " + r.Variant
}

func colourOf(l string) color.Color {
	if c, ok := palette[l]; ok {
		return c
	}
	return color.Black
}

// drawCurve writes a PNG: pairs/s against goroutines (log scale) for N=1,
// 3 and 5, one line per implementation, and the hand-off gap p50 per
// implementation for each N the run measured.
func drawCurve(path string, res []CaseRow) error {
	var panels []*plot.Plot
	for _, n := range []int{1, 3, 5} {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("N=%d: Lock+Unlock pairs/s", n)
		p.X.Label.Text = "goroutines (distinct names)"
		p.Y.Label.Text = "pairs/s"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.ConstantTicks(ticks(curveGoroutines))
		p.Legend.Top = true
		p.Legend.Left = true
		lines := map[string]plotter.XYs{}
		var order []string
		for i := range res {
			r := &res[i]
			if r.Case != "curve" || r.Nodes != n {
				continue
			}
			l := label(r)
			if _, ok := lines[l]; !ok {
				order = append(order, l)
			}
			lines[l] = append(lines[l], plotter.XY{X: float64(r.Goroutines), Y: r.OpsPerSec})
		}
		if len(order) == 0 {
			continue
		}
		for _, l := range order {
			xy := lines[l]
			slices.SortFunc(xy, func(a, b plotter.XY) int { return int(a.X - b.X) })
			line, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			line.Color, pts.Color = colourOf(l), colourOf(l)
			line.Width = vg.Points(1.5)
			p.Add(line, pts)
			p.Legend.Add(l, line, pts)
		}
		p.Y.Min = 0
		panels = append(panels, p)
	}
	if p, err := gapPanel(res); err != nil {
		return err
	} else if p != nil {
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return fmt.Errorf("nothing to draw: no curve or hand-off results in this run")
	}
	const cols = 2
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for j := range grid {
		grid[j] = make([]*plot.Plot, cols)
		for i := range cols {
			if k := j*cols + i; k < len(panels) {
				grid[j][i] = panels[k]
			}
		}
	}
	return pngplot.Write(path, grid, vg.Points(float64(cols)*420), vg.Points(float64(rows)*320), vg.Millimeter*3)
}

// gapPanel is a dot chart of the hand-off gap p50 (release to the next
// grant) per implementation and N.
func gapPanel(res []CaseRow) (*plot.Plot, error) {
	var names []string
	var vals plotter.Values
	for i := range res {
		r := &res[i]
		if r.Case != "handoff" || r.GapP50us == nil {
			continue
		}
		names = append(names, fmt.Sprintf("%s N=%d", label(r), r.Nodes))
		vals = append(vals, *r.GapP50us/1e3)
	}
	if len(vals) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "forced hand-off: gap p50 (ms, log scale)"
	p.Y.Label.Text = "ms"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	// Points, not bars: a log axis has no zero for bars to stand on.
	xy := make(plotter.XYs, len(vals))
	for i, v := range vals {
		xy[i] = plotter.XY{X: float64(i), Y: v}
	}
	pts, err := plotter.NewScatter(xy)
	if err != nil {
		return nil, err
	}
	pts.GlyphStyle.Radius = vg.Points(4)
	pts.GlyphStyle.Shape = draw.CircleGlyph{}
	pts.Color = colourOf("quorumlock")
	p.Add(pts, plotter.NewGrid())
	// The range by hand: with one value (or equal ones) the default range
	// has no width and is padded below zero, which a log axis cannot draw.
	p.Y.Min, p.Y.Max = slices.Min(vals)/2, slices.Max(vals)*2
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.Font.Size = vg.Points(7)
	return p, nil
}

func ticks(xs []int) []plot.Tick {
	out := make([]plot.Tick, len(xs))
	for i, x := range xs {
		out[i] = plot.Tick{Value: float64(x), Label: fmt.Sprint(x)}
	}
	return out
}
