package main

import (
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/bench/adapters"
)

// latencyCase reports whether a case is about how long an operation takes
// (frozen nodes) rather than how many per second.
func latencyCase(id string) bool { return strings.HasPrefix(id, "frozen") }

func printReport(w io.Writer, env Env, o options, res []CaseRow) {
	fmt.Fprintf(w, "\n# quorumlock vs peers — medians of %d rounds, implementations interleaved\n\n", o.rounds)
	fmt.Fprintf(w, "Ratios are medians of per-round ratios (each round runs every implementation back to back).\n")
	fmt.Fprintf(w, "machine: %d CPUs (%s), %s, %s, redis-server %s; load average at end %s\n", env.CPUs, env.CPUModel, env.OS, env.GoVersion, env.Redis, env.Load)
	fmt.Fprintf(w, "command: %s (took %s)\n", env.Command, env.Duration)
	fmt.Fprintf(w, "clients: quorumlock and the \"ctx-timeouts\" rows use ContextTimeoutEnabled, MaxRetries -1; the peers and raw use go-redis defaults.\n")
	var title string
	var ours *CaseRow
	for i := range res {
		r := &res[i]
		if r.Title != title {
			title = r.Title
			ours = nil
			for j := range res {
				if res[j].Title == title && res[j].Impl == string(adapters.Quorumlock) && res[j].Variant == "default" {
					ours = &res[j]
				}
			}
			fmt.Fprintf(w, "\n## %s\n\n", title)
			switch {
			case strings.HasPrefix(r.Case, "handoff"):
				fmt.Fprintln(w, "| impl | acquisitions/s | gap p50 µs | gap p90 µs | gap mean µs | fairness min/max | wait p50 µs | wait p99 µs | allocs/op | CPU µs/op client + servers | CPU busy | quorumlock ÷ impl |")
				fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
			case latencyCase(r.Case):
				fmt.Fprintf(w, "| impl | %s p50 ms | p99 ms | max ms | ops/s | samples | errors | impl p50 ÷ quorumlock p50 |\n", r.Metric)
				fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|")
			default:
				fmt.Fprintf(w, "| impl | ops/s | %s p50 µs | p99 µs | allocs/op | CPU µs/op client + servers | CPU busy | quorumlock ÷ impl |\n", r.Metric)
				fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|")
			}
		}
		name := r.Impl
		if r.Variant != "default" || r.Impl == string(adapters.Redsync) {
			name += " " + r.Variant
		}
		ratio := "—"
		switch {
		case r.Case == "fencing" && r.Variant == "fencing":
			for j := range res {
				if res[j].Title == r.Title && res[j].Variant == "default" && res[j].OpsPerSec > 0 {
					ratio = fmt.Sprintf("fencing ÷ off %.2f", pairedRatio(r, &res[j]))
				}
			}
		case r.Case == functionsCaseID && strings.HasSuffix(r.Variant, "functions"):
			ratio = functionsRatio(res, r)
		case r.Case == scalingCaseID:
			ratio = scalingNote(res, r)
		case ours == nil:
		case latencyCase(r.Case):
			if ours.P50us > 0 {
				ratio = fmt.Sprintf("%.1f", r.P50us/ours.P50us)
			}
		default:
			if r.OpsPerSec > 0 {
				ratio = fmt.Sprintf("%.2f", pairedRatio(ours, r))
			}
		}
		cpu := fmt.Sprintf("%.0f + %.0f", r.ClientCPUusPerOp, r.ServersCPUusPerOp)
		switch {
		case strings.HasPrefix(r.Case, "handoff"):
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.0f | %.0f | %.0f | %s | %.0f%% | %s |\n", name, rate(r.OpsPerSec),
				optf(r.GapP50us, "%.0f"), optf(r.GapP90us, "%.0f"), optf(r.GapMeanus, "%.0f"), optf(r.Fairness, "%.2f"), r.P50us, r.P99us, r.AllocsPerOp, cpu, 100*r.CPUBusy, ratio)
		case latencyCase(r.Case):
			fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %s | %d | %d | %s |\n", name, r.P50us/1e3, r.P99us/1e3, r.MaxUs/1e3,
				rate(r.OpsPerSec), r.Ops, r.Errors, ratio)
		default:
			fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.0f | %s | %.0f%% | %s |\n", name, rate(r.OpsPerSec), r.P50us, r.P99us,
				r.AllocsPerOp, cpu, 100*r.CPUBusy, ratio)
		}
		if len(r.ServerStats) > 0 {
			keys := slices.Sorted(maps.Keys(r.ServerStats))
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%.2f", k, r.ServerStats[k]))
			}
			defer fmt.Fprintf(w, "stats per op: %s %s: %s\n", r.Title, name, strings.Join(parts, " "))
		}
		if r.FirstError != "" {
			defer fmt.Fprintf(w, "note: %s %s: %d errors, first: %s\n", r.Title, name, r.Errors, oneLine(r.FirstError))
		}
	}
	fmt.Fprintf(w, "\n## Targets\n\n[lo–hi]: a 90%% bootstrap interval of a ratio's median over the run's paired rounds; a miss whose interval reaches the target is within this run's noise.\n\n| target | measured | |\n|---|---|---|\n")
	for _, c := range checks(res) {
		mark := "MISS"
		switch {
		case c.Pass:
			mark = "ok"
		case c.WithinNoise:
			mark = "MISS (within noise)"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", c.Target, c.Measured, mark)
	}
	fmt.Fprintln(w)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func rate(v float64) string {
	if v >= 100 {
		return commas(int64(v + 0.5))
	}
	return fmt.Sprintf("%.1f", v)
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func optf(v *float64, f string) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf(f, *v)
}

// pairedRatio is the median over rounds of a's rate ÷ b's rate in the same
// round: the two ran back to back, so load from elsewhere on a shared machine
// hits both alike, where a ratio of two medians can pair a quiet round of one
// with a busy round of the other. Falls back to the ratio of the medians when
// the rounds do not pair up.
func pairedRatio(a, b *CaseRow) float64 {
	if rs := pairedRatios(a, b); len(rs) > 0 {
		return median(rs)
	}
	if b.OpsPerSec == 0 {
		return 0
	}
	return a.OpsPerSec / b.OpsPerSec
}

// pairedRatios is a's rate ÷ b's rate round by round; nil when the rounds
// do not pair up.
func pairedRatios(a, b *CaseRow) []float64 {
	if len(a.RoundsRates) != len(b.RoundsRates) {
		return nil
	}
	var rs []float64
	for i := range a.RoundsRates {
		if b.RoundsRates[i] > 0 {
			rs = append(rs, a.RoundsRates[i]/b.RoundsRates[i])
		}
	}
	return rs
}

// medianInterval is a 90% percentile-bootstrap interval of the median of
// v: the 5th and 95th percentiles of the medians of 2,000 resamples of v
// drawn with replacement. The seed is fixed, so a report recomputed from
// the same rounds gives the same interval. ok is false for fewer than 5
// values, where the interval says nothing.
func medianInterval(v []float64) (lo, hi float64, ok bool) {
	const resamples = 2000
	if len(v) < 5 {
		return 0, 0, false
	}
	rng := rand.New(rand.NewPCG(1, 2))
	meds := make([]float64, resamples)
	s := make([]float64, len(v))
	for i := range meds {
		for j := range s {
			s[j] = v[rng.IntN(len(v))]
		}
		meds[i] = median(s)
	}
	slices.Sort(meds)
	return meds[resamples*5/100], meds[resamples*95/100-1], true
}

// Check is one target from the issue, evaluated on this run.
type Check struct {
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Pass     bool   `json:"pass"`
	// WithinNoise: a missed ratio whose 90% interval (medianInterval over
	// the run's paired rounds) still reaches the target, so this run cannot
	// tell it from a pass.
	WithinNoise bool `json:"within_noise,omitempty"`
}

func find(res []CaseRow, id string, nodes, g int, impl adapters.Impl, variant string) *CaseRow {
	for i := range res {
		r := &res[i]
		if r.Case == id && r.Nodes == nodes && r.Goroutines == g && r.Impl == string(impl) && r.Variant == variant {
			return r
		}
	}
	return nil
}

// Per-node budget of a TryLock with quorum's defaults: the 250 ms attempt
// timeout split over 5 nodes (Majority's LockWaitTime).
const perNodeBudget = 250 * time.Millisecond / 5

// checks evaluates the targets on the results that are present.
func checks(res []CaseRow) []Check {
	var out []Check
	ratio := func(target string, a, b *CaseRow, want float64) {
		if a == nil || b == nil || b.OpsPerSec == 0 {
			return
		}
		x := pairedRatio(a, b)
		c := Check{Target: fmt.Sprintf("%s ≥ %.2f×", target, want), Pass: x >= want}
		interval := ""
		if lo, hi, ok := medianInterval(pairedRatios(a, b)); ok {
			interval = fmt.Sprintf(" [%.2f–%.2f]", lo, hi)
			c.WithinNoise = !c.Pass && hi >= want
		}
		c.Measured = fmt.Sprintf("%.2f×%s (%s vs %s /s)", x, interval, rate(a.OpsPerSec), rate(b.OpsPerSec))
		out = append(out, c)
	}
	const ql, rs, rl, raw, rd = adapters.Quorumlock, adapters.Redsync, adapters.Redislock, adapters.Raw, adapters.Rueidislock
	u := func(n, g int, k adapters.Impl, v string) *CaseRow { return find(res, "uncontended", n, g, k, v) }
	// The lone caller: fencing off as the peers, and with the
	// library's defaults (fencing on).
	ratio("uncontended N=1 1g: quorumlock ÷ redislock", u(1, 1, ql, "default"), u(1, 1, rl, "retry-5ms"), 1.0)
	ratio("uncontended N=1 1g: quorumlock ÷ raw", u(1, 1, ql, "default"), u(1, 1, raw, "default"), 0.95)
	ratio("uncontended N=1 1g: quorumlock defaults (fencing on) ÷ redislock", u(1, 1, ql, "defaults"), u(1, 1, rl, "retry-5ms"), 1.0)
	ratio("uncontended N=1 1g: quorumlock ÷ rueidislock", u(1, 1, ql, "default"), u(1, 1, rd, "default"), 1.0)
	// And what the lone caller costs its process per pair, at most what
	// redislock's does: allocations, and CPU over the whole run (both
	// interleaved in the same rounds).
	if a, b := u(1, 1, ql, "default"), u(1, 1, rl, "retry-5ms"); a != nil && b != nil {
		out = append(out, Check{Target: "uncontended N=1 1g: quorumlock allocations per Lock+Unlock ≤ redislock's",
			Measured: fmt.Sprintf("%.0f vs %.0f", a.AllocsPerOp, b.AllocsPerOp), Pass: a.AllocsPerOp <= b.AllocsPerOp})
		out = append(out, Check{Target: "uncontended N=1 1g: quorumlock client CPU per Lock+Unlock ≤ redislock's",
			Measured: fmt.Sprintf("%.1f vs %.1f µs", a.ClientCPUusPerOp, b.ClientCPUusPerOp), Pass: a.ClientCPUusPerOp <= b.ClientCPUusPerOp})
	}
	for _, n := range []int{3, 5} {
		ratio(fmt.Sprintf("uncontended N=%d 1g: quorumlock ÷ redsync", n), u(n, 1, ql, "default"), u(n, 1, rs, "default"), 1.1)
		ratio(fmt.Sprintf("uncontended N=%d 1g: quorumlock ÷ raw fan-out", n), u(n, 1, ql, "default"), u(n, 1, raw, "default"), 0.95)
	}
	ratio("uncontended N=5 16g: quorumlock ÷ redsync", u(5, 16, ql, "default"), u(5, 16, rs, "default"), 1.1)
	// Batching: against the unbatched path, same run.
	ratio("uncontended N=5 64g: quorumlock ÷ unbatched", u(5, 64, ql, "default"), u(5, 64, ql, "unbatched"), 2)
	ratio("uncontended N=5 64g: quorumlock ÷ redsync", u(5, 64, ql, "default"), u(5, 64, rs, "default"), 2)
	ratio("uncontended N=1 64g: quorumlock ÷ redislock", u(1, 64, ql, "default"), u(1, 64, rl, "retry-5ms"), 1.5)
	ratio("uncontended N=1 64g: quorumlock ÷ rueidislock", u(1, 64, ql, "default"), u(1, 64, rd, "default"), 1.2)
	for _, n := range []int{1, 5} {
		ratio(fmt.Sprintf("uncontended N=%d 1g: quorumlock ÷ unbatched (no cost for a lone caller)", n), u(n, 1, ql, "default"), u(n, 1, ql, "unbatched"), 0.95)
	}
	for _, n := range []int{1, 5} {
		h := func(k adapters.Impl, v string) *CaseRow { return find(res, "handoff", n, handoffWorkers, k, v) }
		ours := h(ql, "default")
		ratio(fmt.Sprintf("hand-off N=%d: quorumlock ÷ redsync default", n), ours, h(rs, "default"), 10)
		ratio(fmt.Sprintf("hand-off N=%d: quorumlock ÷ redsync retry 5ms", n), ours, h(rs, "retry-5ms"), 2.5)
		ratio(fmt.Sprintf("hand-off N=%d: quorumlock ÷ redislock retry 5ms", n), ours, h(rl, "retry-5ms"), 2.5)
		if n == 1 {
			peer := h(rd, "default")
			// 1.5× is out of reach with the 1 ms hold, as the rate of either
			// is at most 1 ÷ (hold as slept + gap) and the gaps are equal:
			// the target is "not behind", with the gap below.
			ratio("hand-off N=1: quorumlock ÷ rueidislock (1.5× asked: above the 1 ms hold's ceiling)", ours, peer, 0.95)
			if ours != nil && peer != nil && ours.GapP50us != nil && peer.GapP50us != nil {
				out = append(out, Check{Target: "hand-off N=1: median gap ≤ rueidislock's",
					Measured: fmt.Sprintf("%.2f ms vs %.2f ms", *ours.GapP50us/1e3, *peer.GapP50us/1e3), Pass: *ours.GapP50us <= *peer.GapP50us})
			}
			if ours != nil && ours.Fairness != nil && peer != nil && peer.Fairness != nil {
				out = append(out, Check{Target: "hand-off N=1: fairness min/max ≥ 0.9 (rueidislock's shown)",
					Measured: fmt.Sprintf("%.2f (rueidislock %.2f)", *ours.Fairness, *peer.Fairness), Pass: *ours.Fairness >= 0.9})
			}
		}
		if ours != nil && ours.GapP50us != nil {
			out = append(out, Check{Target: fmt.Sprintf("hand-off N=%d: median gap ≤ 0.5 ms", n),
				Measured: fmt.Sprintf("%.2f ms", *ours.GapP50us/1e3), Pass: *ours.GapP50us <= 500})
		}
		if ours != nil && ours.Fairness != nil {
			out = append(out, Check{Target: fmt.Sprintf("hand-off N=%d: per-goroutine acquisitions min/max ≥ 0.5", n),
				Measured: fmt.Sprintf("%.2f", *ours.Fairness), Pass: *ours.Fairness >= 0.5})
		}
	}
	if r := find(res, "frozen-2of5", 5, 1, ql, "default"); r != nil {
		out = append(out, Check{Target: "2 of 5 frozen: Lock p99 ≤ 100 ms",
			Measured: fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d errors", r.P50us/1e3, r.P99us/1e3, r.MaxUs/1e3, r.Errors),
			Pass:     r.P99us <= 100e3 && r.Errors == 0})
	}
	if r := find(res, "frozen-3of5-lock", 5, 1, ql, "default"); r != nil {
		out = append(out, Check{Target: "3 of 5 frozen: Lock with a 2 s deadline returns in ≤ 2.2 s",
			Measured: fmt.Sprintf("max %.3f s over %d, %d errors", r.MaxUs/1e6, r.Ops, r.Errors),
			Pass:     r.MaxUs <= 2.2e6 && r.Errors == 0})
	}
	if r := find(res, "frozen-3of5-trylock", 5, 1, ql, "default"); r != nil {
		lim := us(perNodeBudget + 5*time.Millisecond)
		out = append(out, Check{Target: fmt.Sprintf("3 of 5 frozen: TryLock within the per-node budget (%v, +5 ms for the rollback round trip)", perNodeBudget),
			Measured: fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d errors", r.P50us/1e3, r.P99us/1e3, r.MaxUs/1e3, r.Errors),
			Pass:     r.P99us <= lim && r.Errors == 0})
	}
	for _, n := range []int{5, 1} {
		for _, g := range []int{1, 64} {
			ratio(fmt.Sprintf("fencing on, N=%d %dg: fencing ÷ off", n, g), find(res, "fencing", n, g, ql, "fencing"), find(res, "fencing", n, g, ql, "default"), 0.90)
		}
	}
	out = append(out, scalingChecks(res)...)
	return out
}
