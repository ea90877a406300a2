package main

import (
	"strings"
	"testing"
	"time"
)

// samples makes a run of samples every 5 s for 10 minutes, each value from f(minute).
func samples(f func(min float64) (rss float64, goroutines, sockets, keys int)) *SoakReport {
	r := &SoakReport{SocketBound: 80}
	for at := 0.0; at <= 600; at += 5 {
		rss, g, s, k := f(at / 60)
		r.Samples = append(r.Samples, Sample{At: at, RSSMB: rss, Goroutines: g, Sockets: s, Keys: []int{k, k - 3, -1}})
	}
	return r
}

func TestJudge(t *testing.T) {
	flat := func(m float64) (float64, int, int, int) {
		// Warm-up in the first minute, then flat with a little noise.
		w := min(m, 1)
		return 20 + 20*w + float64(int(m*10)%3), 100 + int(400*w), 50 + int(m*10)%5, 1000
	}
	for _, c := range []struct {
		name  string
		r     *SoakReport
		grew  string // the check that must fail, "" for none
		after func(*SoakReport)
	}{
		{name: "flat after warm-up", r: samples(flat)},
		{name: "RSS climbs", r: samples(func(m float64) (float64, int, int, int) {
			_, g, s, k := flat(m)
			return 40 + 3*m, g, s, k
		}), grew: "client RSS"},
		{name: "goroutines climb", r: samples(func(m float64) (float64, int, int, int) {
			rss, _, s, k := flat(m)
			return rss, 500 + int(30*m), s, k
		}), grew: "client goroutines"},
		{name: "sockets climb", r: samples(func(m float64) (float64, int, int, int) {
			rss, g, _, k := flat(m)
			return rss, g, 50 + int(5*m), k
		}), grew: "client open sockets"}, // past the pools' 80 at minute 6
		{name: "sockets swing within the pools", r: samples(func(m float64) (float64, int, int, int) {
			rss, g, _, k := flat(m)
			return rss, g, 40 + int(m*60)%40, k
		})},
		{name: "keys climb", r: samples(func(m float64) (float64, int, int, int) {
			rss, g, s, _ := flat(m)
			return rss, g, s, 1000 + int(100*m)
		}), grew: "keys per node"},
		{name: "goroutine left after Close", r: samples(flat), grew: "goroutines left", after: func(r *SoakReport) { r.GoroutinesLeft = 1 }},
		{name: "key without TTL after Close", r: samples(flat), grew: "keys without a TTL", after: func(r *SoakReport) { r.KeysNoTTL = 2 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.after != nil {
				c.after(c.r)
			}
			c.r.judge(5*time.Minute, 5*time.Second)
			var failed []string
			for _, ch := range c.r.Checks {
				if !ch.Pass {
					failed = append(failed, ch.What)
				}
			}
			if c.grew == "" {
				if !c.r.Pass || len(failed) > 0 {
					t.Fatalf("flat run judged grown: %v (%+v)", failed, c.r.Checks)
				}
				return
			}
			if c.r.Pass || len(failed) != 1 || !strings.HasPrefix(failed[0], c.grew) {
				t.Fatalf("want only %q to fail, failed %v (pass %v)", c.grew, failed, c.r.Pass)
			}
		})
	}
}

// A run too short to get past the warm-up is refused before it starts,
// naming the flag.
func TestTooShortRefused(t *testing.T) {
	var out, log strings.Builder
	err := run([]string{"-dur", "1m"}, &out, &log)
	if err == nil || !strings.Contains(err.Error(), "-dur must be at least 4m") {
		t.Fatalf("-dur 1m: %v", err)
	}
}
