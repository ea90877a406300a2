// Package pngplot writes a grid of gonum plots to one PNG file.
package pngplot

import (
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Write draws grid (rows of plots; nil cells stay empty) into a PNG of
// width × height at path, the panels aligned and padded by pad.
func Write(path string, grid [][]*plot.Plot, width, height, pad vg.Length) error {
	cols := 0
	for _, row := range grid {
		cols = max(cols, len(row))
	}
	img := vgimg.New(width, height)
	dc := draw.New(img)
	t := draw.Tiles{Rows: len(grid), Cols: cols, PadX: pad * 2, PadY: pad * 2,
		PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	canvases := plot.Align(grid, t, dc)
	for j := range grid {
		for i := range grid[j] {
			if grid[j][i] != nil {
				grid[j][i].Draw(canvases[j][i])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
