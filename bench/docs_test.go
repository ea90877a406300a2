package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/bench/adapters"
)

// benchRun is the committed result of the run that docs/performance.md's
// numbers are generated from (path from the repository's root).
const benchRun = "docs/results/bench.json"

var updateDocs = flag.Bool("update", false, "rewrite the generated numbers of docs/performance.md and docs/scaling.md from "+benchRun)

// The markers around the generated numbers in docs/performance.md.
const (
	numbersBegin = "<!-- numbers: generated from " + benchRun + " by cd bench && go test -run TestDocNumbers -update -->\n"
	numbersEnd   = "<!-- end of the generated numbers -->\n"
)

func readRepo(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docNumbers renders the run as docs/performance.md shows it: what ran,
// then one table row per case with quorumlock's figure and the others'
// beside it, ratios paired by round as the bench's own report computes
// them. It fails on a result the table needs and the run lacks.
func docNumbers(f jsonFile) (string, error) {
	var missing []string
	get := func(id string, n, g int, k adapters.Impl, v string) *CaseRow {
		if r := find(f.Results, id, n, g, k, v); r != nil {
			return r
		}
		missing = append(missing, fmt.Sprintf("%s N=%d %dg %s %s", id, n, g, k, v))
		return &CaseRow{}
	}
	const ql, rs, rl, raw, rd = adapters.Quorumlock, adapters.Redsync, adapters.Redislock, adapters.Raw, adapters.Rueidislock
	u := func(n, g int, k adapters.Impl, v string) *CaseRow { return get("uncontended", n, g, k, v) }
	x := func(a, b *CaseRow) string { return fmt.Sprintf("%.2f×", pairedRatio(a, b)) }
	// peer is "name rate (ratio)" of a peer against quorumlock's row.
	peer := func(name string, ours, r *CaseRow) string {
		return fmt.Sprintf("%s %s (%s)", name, rate(r.OpsPerSec), x(ours, r))
	}
	ms := func(us float64) string { return fmt.Sprintf("%.2f ms", us/1e3) }
	opt := func(v *float64) float64 {
		if v == nil {
			return 0
		}
		return *v
	}
	var rows [][2]string
	row := func(name, ours, against string) { rows = append(rows, [2]string{name, ours + " | " + against}) }

	q11 := u(1, 1, ql, "default")
	def := u(1, 1, ql, "defaults")
	rl11 := u(1, 1, rl, "retry-5ms")
	row("1 node, 1 goroutine", fmt.Sprintf("%s/s, %.0f allocs", rate(q11.OpsPerSec), q11.AllocsPerOp),
		fmt.Sprintf("%s, redislock %s (%s, %.0f allocs), %s, %s; defaults %s/s, %.0f allocs (%s redislock)",
			peer("raw", q11, u(1, 1, raw, "default")), rate(rl11.OpsPerSec), x(q11, rl11), rl11.AllocsPerOp,
			peer("redsync", q11, u(1, 1, rs, "default")), peer("rueidislock", q11, u(1, 1, rd, "default")),
			rate(def.OpsPerSec), def.AllocsPerOp, x(def, rl11)))
	q := u(1, 16, ql, "default")
	row("1 node, 16 goroutines", rate(q.OpsPerSec)+"/s", strings.Join([]string{peer("raw", q, u(1, 16, raw, "default")),
		peer("redislock", q, u(1, 16, rl, "retry-5ms")), peer("rueidislock", q, u(1, 16, rd, "default"))}, ", "))
	q = u(1, 64, ql, "default")
	row("1 node, 64 goroutines", rate(q.OpsPerSec)+"/s", strings.Join([]string{peer("unbatched", q, u(1, 64, ql, "unbatched")),
		peer("redislock", q, u(1, 64, rl, "retry-5ms")), peer("rueidislock", q, u(1, 64, rd, "default"))}, ", "))
	for _, n := range []int{3, 5} {
		q = u(n, 1, ql, "default")
		row(fmt.Sprintf("%d nodes, 1 goroutine", n), rate(q.OpsPerSec)+"/s",
			peer("raw fan-out", q, u(n, 1, raw, "default"))+", "+peer("redsync", q, u(n, 1, rs, "default")))
	}
	q = u(5, 16, ql, "default")
	row("5 nodes, 16 goroutines", rate(q.OpsPerSec)+"/s", peer("redsync", q, u(5, 16, rs, "default")))
	q = u(5, 64, ql, "default")
	row("5 nodes, 64 goroutines", rate(q.OpsPerSec)+"/s",
		peer("unbatched", q, u(5, 64, ql, "unbatched"))+", "+peer("redsync", q, u(5, 64, rs, "default")))

	for _, n := range []int{1, 5} {
		h := func(k adapters.Impl, v string) *CaseRow { return get("handoff", n, handoffWorkers, k, v) }
		o := h(ql, "default")
		// The hold is in the case's title ("…, lock held 1ms").
		_, hold, _ := strings.Cut(o.Title, "lock held ")
		against := ""
		if n == 1 {
			r := h(rd, "default")
			against = fmt.Sprintf("rueidislock %s/s, %s, %.2f; redsync %s/s; redislock (5 ms retry) %s/s",
				rate(r.OpsPerSec), ms(opt(r.GapP50us)), opt(r.Fairness), rate(h(rs, "default").OpsPerSec), rate(h(rl, "retry-5ms").OpsPerSec))
		} else {
			against = fmt.Sprintf("redsync %s/s; redsync (5 ms retry) %s/s", rate(h(rs, "default").OpsPerSec), rate(h(rs, "retry-5ms").OpsPerSec))
		}
		row(fmt.Sprintf("hand-off, %d waiters, %d node%s, %s hold", handoffWorkers, n, plural(n), spaced(hold)),
			fmt.Sprintf("%s/s, gap p50 %s, fairness %.2f", rate(o.OpsPerSec), ms(opt(o.GapP50us)), opt(o.Fairness)), against)
	}

	fz := func(id string, k adapters.Impl, v string) *CaseRow { return get(id, 5, 1, k, v) }
	o, slow, tuned := fz("frozen-2of5", ql, "default"), fz("frozen-2of5", rs, "default"), fz("frozen-2of5", rs, "ctx-timeouts")
	row("2 of 5 nodes frozen (SIGSTOP): Lock", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms", o.P50us/1e3, o.P99us/1e3),
		fmt.Sprintf("redsync p50 %.1f s, p99 %.1f s on go-redis defaults, p50 %.0f ms on our settings", slow.P50us/1e6, slow.P99us/1e6, tuned.P50us/1e3))
	o, slow = fz("frozen-3of5-trylock", ql, "default"), fz("frozen-3of5-trylock", rs, "default")
	row("3 of 5 frozen: TryLock gives up", fmt.Sprintf("%.0f ms, p99 %.0f ms (the per-node budget is %s)", o.P50us/1e3, o.P99us/1e3, spaced(perNodeBudget.String())),
		fmt.Sprintf("redsync %.1f s", slow.P50us/1e6))
	o, slow = fz("frozen-3of5-lock", ql, "default"), fz("frozen-3of5-lock", rs, "default")
	row(fmt.Sprintf("3 of 5 frozen: Lock with a %s deadline", spaced(lockDeadlineBudget.String())), fmt.Sprintf("%.3f s", o.MaxUs/1e6),
		fmt.Sprintf("redsync %.1f s", slow.P50us/1e6))

	fence := func(n, g int) string {
		return x(get("fencing", n, g, ql, "fencing"), get("fencing", n, g, ql, "default"))
	}
	row("fencing on ÷ off", fmt.Sprintf("5 nodes: %s (1 goroutine), %s (64); 1 node: %s, %s", fence(5, 1), fence(5, 64), fence(1, 1), fence(1, 64)), "")
	// Restart detection against none: as shipped (on these fsync-always
	// nodes it asks nothing per call) and forced on every node (an INFO
	// in each acquire's round trip, as on a node without persistence).
	restart := func(n int, v string) string {
		id := fmt.Sprintf("defaults-n%d", n)
		return x(get(id, n, 1, ql, v), get(id, n, 1, ql, "defaults - restart detection"))
	}
	const forced = "defaults + restart detection on every node"
	row("restart detection on ÷ off, 1 goroutine",
		fmt.Sprintf("forced on every node: 5 nodes %s, 1 node %s", restart(5, forced), restart(1, forced)),
		fmt.Sprintf("as shipped, on these persistent nodes: %s, %s", restart(5, "defaults"), restart(1, "defaults")))

	fn, ev := get(functionsCaseID, 1, 1, ql, "functions"), get(functionsCaseID, 1, 1, ql, "default")
	fu, fc := scriptUsPerOp(fn)
	eu, ec := scriptUsPerOp(ev)
	if fc == 0 || ec == 0 {
		missing = append(missing, "the functions case's script stats")
		fc, ec = 1, 1
	}
	row("Redis Functions (FCALL) ÷ EVALSHA, 1 node", fmt.Sprintf("server µs per script call %.1f vs %.1f (%.2f×); pairs/s %s",
		fu/fc, eu/ec, (fu/fc)/(eu/ec), x(fn, ev)), "")

	mem := map[string]int64{}
	var fencedLeft, perClient int64
	for _, m := range f.Memory {
		mem[m.Impl+" "+m.Variant] = m.HeldBytes
		if m.Impl == string(ql) && m.Variant == "fencing" {
			fencedLeft, perClient = m.ReleaseBytes, m.ClientBytes
		}
	}
	for _, k := range []string{"quorumlock default", "quorumlock fencing", "redislock default", "redsync default", "rueidislock default"} {
		if _, ok := mem[k]; !ok {
			missing = append(missing, "memory of "+k)
		}
	}
	row("server memory per held lock", fmt.Sprintf("%d B; fenced %d B, of which %d B (the counter) stay after release; %d B once per client (its label key)",
		mem["quorumlock default"], mem["quorumlock fencing"], fencedLeft, perClient),
		fmt.Sprintf("redislock %d B, redsync %d B, rueidislock %d B", mem["redislock default"], mem["redsync default"], mem["rueidislock default"]))

	if len(missing) > 0 {
		return "", fmt.Errorf("the run lacks %s", strings.Join(missing, "; "))
	}

	targets, met := len(f.Targets), 0
	for _, c := range f.Targets {
		if c.Pass {
			met++
		}
	}
	e := f.Env
	var b strings.Builder
	fmt.Fprintf(&b, "The committed run (`%s`: `%s`, %s, %s) on %d vCPUs (%s), Go %s, redis-server %s, five servers and the client on the same cores (load average %s at the end). It met %d of the bench's %d targets.\n\n",
		benchRun, e.Command, e.Started.Format(time.DateOnly), e.Duration, e.CPUs, e.CPUModel, strings.TrimPrefix(e.GoVersion, "go"), e.Redis, e.Load, met, targets)
	b.WriteString("| case | quorumlock | against |\n|---|--:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", r[0], r[1])
	}
	return b.String(), nil
}

// readRun reads the committed run.
func readRun(t *testing.T) jsonFile {
	t.Helper()
	var f jsonFile
	if err := json.Unmarshal([]byte(readRepo(t, benchRun)), &f); err != nil {
		t.Fatalf("%s: %v", benchRun, err)
	}
	return f
}

// The numbers docs/performance.md shows are those of the committed run,
// rendered by docNumbers: a page edited by hand or a run committed without
// its page fails here. Only committed files are read.
func TestDocNumbersMatchTheCommittedRun(t *testing.T) {
	gen, err := docNumbers(readRun(t))
	if err != nil {
		t.Fatalf("%s: %v", benchRun, err)
	}
	checkBlock(t, "docs/performance.md", numbersBegin, numbersEnd, gen, benchRun, "TestDocNumbers")
}

// checkBlock compares the block between begin and end of page (a path
// from the repository's root) with gen, rendered from the committed run
// source (test names the test whose -update rewrites it), or writes gen
// there under -update.
func checkBlock(t *testing.T, page, begin, end, gen, source, test string) {
	t.Helper()
	doc := readRepo(t, page)
	before, rest, ok1 := strings.Cut(doc, begin)
	block, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no %q … %q block: update this test", page, begin, end)
	}
	if *updateDocs {
		if err := os.WriteFile(filepath.Join("..", page), []byte(before+begin+gen+end+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if block != gen {
		gl, wl := strings.Split(block, "\n"), strings.Split(gen, "\n")
		for i := range max(len(gl), len(wl)) {
			if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
				t.Errorf("%s's numbers differ from %s (cd bench && go test -run %s -update rewrites them); first difference, line %d:\n page: %s\n run:  %s",
					page, source, test, i+1, lineOf(gl, i), lineOf(wl, i))
				break
			}
		}
	}
}

// spaced writes a duration as the docs do: "1 ms", not "1ms".
func spaced(d string) string {
	i := strings.IndexFunc(d, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	if i <= 0 {
		return d
	}
	return d[:i] + " " + d[i:]
}

func lineOf(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}

var (
	rateRe  = regexp.MustCompile(`(\d{1,3}(?:,\d{3})+|\d+)(?: acquire\+release pairs| pairs)?/s\b`)
	ratioRe = regexp.MustCompile(`(\d+\.\d+)×`)
	numRe   = regexp.MustCompile(`\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?`)
	allocRe = regexp.MustCompile(`(\d+) (?:allocs|allocations)\b|instead of (\d+)\b`)
)

// all returns the first non-empty group of every match of re in s (the
// match itself when re has no group).
func all(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		if len(m) == 1 {
			out = append(out, m[0])
			continue
		}
		for _, g := range m[1:] {
			if g != "" {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// The bench figures other pages quote (rates, the fencing and restart
// detection ratios, allocations per Lock+Unlock) are the committed run's,
// as docNumbers renders them: a page that quotes another run's 0.89×
// beside the run's 0.96× fails.
func TestDocsQuoteTheCommittedRun(t *testing.T) {
	gen, err := docNumbers(readRun(t))
	if err != nil {
		t.Fatalf("%s: %v", benchRun, err)
	}
	// The table gives most rates without "/s" ("raw 11,924 (0.96×)"):
	// every number in it counts.
	nums, allocs := all(numRe, gen), all(allocRe, gen)
	ratiosOf := func(prefix string) []string {
		for _, line := range strings.Split(gen, "\n") {
			if strings.HasPrefix(line, prefix) {
				return all(ratioRe, line)
			}
		}
		return nil
	}
	fencing, restart := ratiosOf("| fencing on ÷ off"), ratiosOf("| restart detection on ÷ off")
	if len(nums) < 10 || len(allocs) < 2 || len(fencing) < 4 || len(restart) < 4 {
		t.Fatalf("the rendered run gave %d numbers, %d allocation counts, fencing ratios %q, restart detection ratios %q: update this test", len(nums), len(allocs), fencing, restart)
	}

	for _, c := range []struct {
		page string
		// only: the lines of the page to check (all when empty).
		only  string
		rates bool
		// ratios: every ratio on those lines is one of these.
		ratios []string
	}{
		{page: "docs/defaults.md", only: "**fencing tokens on**", ratios: fencing},
		{page: "docs/defaults.md", only: "**restart detection on", ratios: restart},
		{page: "docs/safety.md", only: "fenced ÷ unfenced", ratios: fencing},
		{page: "docs/operations.md", rates: true},
		{page: "README.md", rates: true},
		{page: "docs/choosing.md"},
		{page: "docs/performance.md", rates: true},
	} {
		doc := readRepo(t, c.page)
		if before, rest, ok := strings.Cut(doc, numbersBegin); ok {
			// The generated block is the run itself.
			_, after, _ := strings.Cut(rest, numbersEnd)
			doc = before + after
		}
		text := doc
		if c.only != "" {
			// The paragraph that holds it, or its line in a table.
			i := strings.Index(doc, c.only)
			if i < 0 {
				t.Errorf("%s: no %q: update this test", c.page, c.only)
				continue
			}
			sep := "\n\n"
			if start := strings.LastIndexByte(doc[:i], '\n') + 1; strings.HasPrefix(doc[start:], "|") {
				sep = "\n"
			}
			start := strings.LastIndex(doc[:i], sep) + len(sep)
			end := strings.Index(doc[i:], sep)
			if end < 0 {
				end = len(doc) - i
			}
			text = doc[start : i+end]
		}
		for _, r := range all(ratioRe, text) {
			if c.ratios != nil && !slices.Contains(c.ratios, r) {
				t.Errorf("%s: %s× where the committed run says %q", c.page, r, c.ratios)
			}
		}
		if c.rates {
			for _, r := range all(rateRe, text) {
				if !slices.Contains(nums, r) {
					t.Errorf("%s: %s/s is no rate of the committed run", c.page, r)
				}
			}
		}
		for _, a := range all(allocRe, text) {
			if !slices.Contains(allocs, a) {
				t.Errorf("%s: %s allocations is no count of the committed run (%q)", c.page, a, allocs)
			}
		}
	}
}
