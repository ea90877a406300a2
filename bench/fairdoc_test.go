package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fairRun is the committed output of the fair hand-off benchmark that
// docs/fairness.md's table is generated from (path from the repository's
// root): go test's benchmark format, with the command, date and load as
// configuration lines.
const fairRun = "docs/results/handoff-fair.txt"

const (
	fairBegin = "<!-- hand-off: generated from " + fairRun + " by cd bench && go test -run TestFairnessDoc -update -->\n"
	fairEnd   = "<!-- end of the generated hand-off figures -->\n"
)

// fairSample is one run of one sub-benchmark: its metrics by unit.
type fairSample map[string]float64

// parseFairRun reads the benchmark's lines by sub-benchmark ("clients=1/
// mutex"), in the order they first appear, and its configuration lines.
func parseFairRun(text string) (order []string, runs map[string][]fairSample, conf map[string]string, err error) {
	runs, conf = map[string][]fairSample{}, map[string]string{}
	suffix := regexp.MustCompile(`-\d+$`)
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.Contains(k, " ") {
			conf[k] = strings.TrimSpace(v)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkHandoffFair/N=5/") {
			continue
		}
		name := suffix.ReplaceAllString(strings.TrimPrefix(f[0], "BenchmarkHandoffFair/N=5/"), "")
		s := fairSample{}
		if s["n"], err = strconv.ParseFloat(f[1], 64); err != nil {
			return nil, nil, nil, fmt.Errorf("%q: %v", line, err)
		}
		for i := 2; i+1 < len(f); i += 2 {
			if s[f[i+1]], err = strconv.ParseFloat(f[i], 64); err != nil {
				return nil, nil, nil, fmt.Errorf("%q: %v", line, err)
			}
		}
		if _, seen := runs[name]; !seen {
			order = append(order, name)
		}
		runs[name] = append(runs[name], s)
	}
	return order, runs, conf, nil
}

// median, low and high of one metric over the runs.
func spread(ss []fairSample, unit string) (med, lo, hi float64) {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = s[unit]
	}
	slices.Sort(v)
	n := len(v)
	med = v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return med, v[0], v[n-1]
}

// fairDoc renders the run as docs/fairness.md shows it, and the ratios
// other pages quote: the plain lock's least ÷ most served goroutine (its
// range over the runs) and the fair lock's hand-off rate ÷ the plain
// lock's on one client.
func fairDoc(text string) (block, minMax, fairRatio string, err error) {
	order, runs, conf, err := parseFairRun(text)
	if err != nil {
		return "", "", "", err
	}
	for _, k := range []string{"clients=1/mutex", "clients=1/fair", "clients=3/mutex", "clients=3/fair"} {
		if len(runs[k]) == 0 {
			return "", "", "", fmt.Errorf("no %s run", k)
		}
	}
	count := len(runs[order[0]])
	acq := runs[order[0]][0]["n"]
	var b strings.Builder
	fmt.Fprintf(&b, "The committed run (`%s`: `%s`, %s, load average %s at the end): %d runs of %.0f acquisitions each, medians, range in brackets.\n\n",
		fairRun, conf["command"], conf["date"], conf["load-average"], count, acq)
	b.WriteString("| lock | clients | acq/s | median gap (ms) | least / most served goroutine | calls per acquisition |\n|---|---|---|---|---|---|\n")
	fairLo, fairHi := acq, 0.0
	mutexLo, mutexHi := 1.0, 0.0
	for _, k := range order {
		ss := runs[k]
		clients, kind, _ := strings.Cut(strings.TrimPrefix(k, "clients="), "/")
		lock := "`Mutex`"
		if kind == "fair" {
			lock = "`FairMutex`"
		}
		r, rlo, rhi := spread(ss, "acq/s")
		g, glo, ghi := spread(ss, "gap-p50-ms")
		mn, _, _ := spread(ss, "min-acq")
		mx, _, _ := spread(ss, "max-acq")
		c, _, _ := spread(ss, "calls/acq")
		served := fmt.Sprintf("%.0f / %.0f", mn, mx)
		if kind == "fair" {
			served = "**" + served + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f [%.0f–%.0f] | %.2f [%.2f–%.2f] | %s | %.1f |\n", lock, clients, r, rlo, rhi, g, glo, ghi, served, c)
		for _, s := range ss {
			if kind == "fair" {
				fairLo, fairHi = min(fairLo, s["min-acq"]), max(fairHi, s["max-acq"])
			} else {
				mutexLo, mutexHi = min(mutexLo, s["min/max"]), max(mutexHi, s["min/max"])
			}
		}
	}
	workers := 8.0
	minMax = fmt.Sprintf("%.2f–%.2f", mutexLo, mutexHi)
	fmt.Fprintf(&b, "\n%.0f acquisitions over %.0f goroutines is %.0f each. The fair lock gave every goroutine between %.0f and %.0f, in every run; the plain lock gave the least served goroutine %s of what the most served got.\n",
		acq, workers, acq/workers, fairLo, fairHi, minMax)
	fair, _, _ := spread(runs["clients=1/fair"], "acq/s")
	plain, _, _ := spread(runs["clients=1/mutex"], "acq/s")
	return b.String(), minMax, fmt.Sprintf("%.1f×", fair/plain), nil
}

// docs/fairness.md's hand-off table is the committed benchmark run, and
// the figures other lines quote from it (fairness.md's opening, the fair
// lock's rate in choosing.md) are that run's.
func TestFairnessDocMatchesTheCommittedRun(t *testing.T) {
	block, minMax, ratio, err := fairDoc(readRepo(t, fairRun))
	if err != nil {
		t.Fatalf("%s: %v", fairRun, err)
	}
	checkBlock(t, "docs/fairness.md", fairBegin, fairEnd, block, fairRun, "TestFairnessDoc")
	for _, c := range []struct{ page, want string }{
		{"docs/fairness.md", "got " + minMax + " times as many"},
		{"docs/choosing.md", "about " + ratio + " Mutex's hand-off rate"},
	} {
		if flat := strings.Join(strings.Fields(readRepo(t, c.page)), " "); !strings.Contains(flat, c.want) {
			t.Errorf("%s: no %q (%s says so)", c.page, c.want, fairRun)
		}
	}
}
