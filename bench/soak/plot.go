package main

import (
	"fmt"
	"image/color"

	"github.com/quorumlock/quorumlock/bench/internal/pngplot"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var nodeColours = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
}

// drawSoak writes a PNG of four panels over minutes into the run: client
// RSS and heap, goroutines, open sockets, and keys per node; grey lines mark
// the node restarts.
func drawSoak(path string, r *SoakReport) error {
	type series struct {
		label string
		of    func(Sample) (float64, bool)
	}
	panels := []struct {
		title string
		lines []series
	}{
		{"client memory (MB)", []series{
			{"RSS", func(s Sample) (float64, bool) { return s.RSSMB, true }},
			{"Go heap in use", func(s Sample) (float64, bool) { return s.HeapMB, true }},
		}},
		{"client goroutines", []series{{"goroutines", func(s Sample) (float64, bool) { return float64(s.Goroutines), true }}}},
		{"client open sockets", []series{{"sockets", func(s Sample) (float64, bool) { return float64(s.Sockets), true }}}},
		{"keys per node (DBSIZE)", nil},
	}
	nodes := 0
	for _, s := range r.Samples {
		nodes = max(nodes, len(s.Keys))
	}
	for i := range nodes {
		panels[3].lines = append(panels[3].lines, series{fmt.Sprintf("node %d", i), func(s Sample) (float64, bool) {
			if i < len(s.Keys) && s.Keys[i] >= 0 {
				return float64(s.Keys[i]), true
			}
			return 0, false
		}})
	}
	var plots [][]*plot.Plot
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "minutes"
		p.Legend.Top = true
		p.Legend.Left = true
		top := 0.0
		for k, sr := range pn.lines {
			var xy plotter.XYs
			for _, s := range r.Samples {
				if v, ok := sr.of(s); ok {
					xy = append(xy, plotter.XY{X: s.At / 60, Y: v})
					top = max(top, v)
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.Color = nodeColours[k%len(nodeColours)]
			l.Width = vg.Points(1.2)
			p.Add(l)
			if len(pn.lines) > 1 {
				p.Legend.Add(sr.label, l)
			}
		}
		p.Y.Min, p.Y.Max = 0, top*1.25+1
		for _, at := range r.Restarts {
			l, err := plotter.NewLine(plotter.XYs{{X: at / 60, Y: 0}, {X: at / 60, Y: p.Y.Max}})
			if err != nil {
				return err
			}
			l.Color = color.Gray{Y: 0xb0}
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			p.Add(l)
		}
		plots = append(plots, []*plot.Plot{p})
	}
	return pngplot.Write(path, plots, vg.Points(620), vg.Points(float64(len(plots))*190), vg.Millimeter*3)
}
