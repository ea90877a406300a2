package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"time"
)

// minWindow is the fewest samples a median takes, around the reference
// time and at the end: one sample is noise (a GC cycle, a restart in
// progress, the connection pools growing and shrinking with demand).
const minWindow = 5

// growth limits: a value at the end may be 1.2× its value at the reference
// time, plus a little slack for small counts (a key of a lock in flight).
// Open sockets are judged apart (see judge).
var limits = []struct {
	what  string
	of    func(Sample) (float64, bool)
	slack float64
}{
	{"client RSS (MB)", func(s Sample) (float64, bool) { return s.RSSMB, s.RSSMB > 0 }, 0},
	{"client goroutines", func(s Sample) (float64, bool) { return float64(s.Goroutines), true }, 0},
	{"keys per node (most of any node)", func(s Sample) (float64, bool) {
		m := slices.Max(append([]int{-1}, s.Keys...))
		return float64(m), m >= 0
	}, 10},
}

// judge sets the checks and the verdict: every value's median over the
// last window samples at most 1.2× (plus slack) its median over the window
// samples nearest ref into the run; no goroutine and no key without a TTL
// left after Close. A window is a minute of samples (every apart), at
// least minWindow and at most a quarter of them.
func (r *SoakReport) judge(ref, every time.Duration) {
	window := max(minWindow, min(int(time.Minute/every), len(r.Samples)/4))
	r.Checks = nil
	r.Pass = true
	for _, l := range limits {
		near := nearest(r.Samples, ref.Seconds(), window)
		last := r.Samples[max(0, len(r.Samples)-window):]
		a, b := median(near, l.of), median(last, l.of)
		c := Check{What: l.what, Ref: a, End: b, Limit: 1.2*a + l.slack}
		c.Pass = !math.IsNaN(a) && !math.IsNaN(b) && b <= c.Limit
		r.Checks = append(r.Checks, c)
		r.Pass = r.Pass && c.Pass
	}
	// Sockets follow the demand: go-redis opens pooled connections as
	// calls queue and closes idle ones, so their count swings by half
	// within minutes with no trend. A leaked connection is one the pools
	// do not account for: the most ever open after the first minute may
	// not exceed what the pools, the pub/sub listeners and the sampler
	// may hold.
	sockets := func(s Sample) (float64, bool) { return float64(s.Sockets), s.At > 60 }
	most := 0.0
	for _, s := range r.Samples {
		if v, ok := sockets(s); ok {
			most = max(most, v)
		}
	}
	sc := Check{What: "client open sockets (the most after the first minute, against what the pools allow)",
		Ref: median(nearest(r.Samples, ref.Seconds(), window), sockets), End: most, Limit: float64(r.SocketBound)}
	sc.Pass = most > 0 && most <= sc.Limit
	r.Checks = append(r.Checks, sc)
	r.Pass = r.Pass && sc.Pass
	for _, c := range []Check{
		{What: "goroutines left after Close", End: float64(r.GoroutinesLeft)},
		{What: "keys without a TTL after Close", End: float64(r.KeysNoTTL)},
	} {
		c.Pass = c.End <= c.Limit
		r.Checks = append(r.Checks, c)
		r.Pass = r.Pass && c.Pass
	}
}

// nearest returns the n samples whose times are closest to at.
func nearest(ss []Sample, at float64, n int) []Sample {
	s := slices.Clone(ss)
	slices.SortStableFunc(s, func(a, b Sample) int {
		da, db := math.Abs(a.At-at), math.Abs(b.At-at)
		switch {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return 0
	})
	return s[:min(n, len(s))]
}

// median of the values of ss that of reports (NaN when there are none).
func median(ss []Sample, of func(Sample) (float64, bool)) float64 {
	var v []float64
	for _, s := range ss {
		if x, ok := of(s); ok {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func (r *SoakReport) print(w io.Writer) {
	fmt.Fprintf(w, "\n## soak: %s, %d nodes, %d node restarts, %d samples\n\n", r.Duration, r.Nodes, len(r.Restarts), len(r.Samples))
	fmt.Fprintf(w, "| lock kind | acquired | refused (held by another) | errors | first error |\n|---|--:|--:|--:|---|\n")
	for _, k := range slices.Sorted(maps.Keys(r.Kinds)) {
		c := r.Kinds[k]
		fmt.Fprintf(w, "| %s | %d | %d | %d | %s |\n", k, c.Acquired, c.Refused, c.Errors, c.First)
	}
	fmt.Fprintf(w, "\n| value | at reference | at end | limit | |\n|---|--:|--:|--:|---|\n")
	for _, c := range r.Checks {
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %s |\n", c.What, c.Ref, c.End, c.Limit, map[bool]string{true: "ok", false: "GREW"}[c.Pass])
	}
	fmt.Fprintf(w, "\nverdict: %s\n", map[bool]string{true: "pass", false: "FAIL"}[r.Pass])
}
