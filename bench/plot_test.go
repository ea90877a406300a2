package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// The curve draws what the run measured, and says so when it measured
// nothing to draw.
func TestDrawCurve(t *testing.T) {
	gap := 250.0
	var res []CaseRow
	for _, n := range []int{1, 3, 5} {
		for i, g := range curveGoroutines {
			res = append(res, CaseRow{Case: "curve", Impl: "quorumlock", Variant: "default", Nodes: n, Goroutines: g, OpsPerSec: float64(1000 * (i + 1))})
		}
	}
	res = append(res, CaseRow{Case: "handoff", Impl: "quorumlock", Variant: "default", Nodes: 1, Goroutines: 8, GapP50us: &gap})
	path := filepath.Join(t.TempDir(), "curve.png")
	if err := drawCurve(path, res); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
		t.Errorf("image %v: too small for four panels", b)
	}
	if err := drawCurve(filepath.Join(t.TempDir(), "none.png"), []CaseRow{{Case: "uncontended"}}); err == nil {
		t.Error("drew a curve from no curve or hand-off results")
	}
}
