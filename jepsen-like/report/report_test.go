package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
)

// pauseRun records Kleppmann's pause through the real Recorder and
// resource: two clean tenures, then client 0 reads, is paused past its
// lease, client 1 acquires and increments, client 0 writes its stale
// increment. tokens=false models a lock without fencing tokens.
func pauseRun(fenced, tokens bool) history.History {
	clk := history.NewManualClock(0)
	rec := history.NewRecorder(clk)
	ctr := resource.NewUnfenced(rec)
	if fenced {
		ctr = resource.NewFenced(rec)
	}
	tok := func(t uint64) uint64 {
		if tokens {
			return t
		}
		return 0
	}
	const ttl = 10 * time.Millisecond
	tenure := func(w int, token uint64) {
		clk.Advance(time.Millisecond)
		a := rec.Acquire(w)
		clk.Advance(time.Millisecond)
		a.Acquired(tok(token), clk.Now()+ttl)
		v := ctr.Read(w, a.ID())
		clk.Advance(2 * time.Millisecond)
		_ = ctr.Write(w, a.ID(), v+1, tok(token))
		rec.Release(w, a.ID()).Ok()
	}
	tenure(0, 1)
	tenure(1, 2)
	clk.Advance(time.Millisecond)
	a := rec.Acquire(0)
	clk.Advance(time.Millisecond)
	a.Acquired(tok(3), clk.Now()+ttl)
	v0 := ctr.Read(0, a.ID())
	rec.NemesisStart("pause client 0").Ok()
	clk.Advance(ttl + 3*time.Millisecond)
	tenure(1, 4)
	clk.Advance(2 * time.Millisecond)
	rec.NemesisEnd("pause client 0").Ok()
	_ = ctr.Write(0, a.ID(), v0+1, tok(3))
	clk.Advance(time.Millisecond)
	rec.Release(0, a.ID()).Ok()
	tenure(1, 5)
	return rec.History()
}

// cleanRun is two serial tenures of a lock without tokens.
func cleanRun() history.History {
	clk := history.NewManualClock(0)
	rec := history.NewRecorder(clk)
	ctr := resource.NewFenced(rec)
	for w := range 2 {
		a := rec.Acquire(w)
		a.Acquired(0, clk.Now()+time.Second)
		_ = ctr.Write(w, a.ID(), ctr.Read(w, a.ID())+1, 0)
		rec.Release(w, a.ID()).Ok()
	}
	return rec.History()
}

// failedRun has only failed acquisitions.
func failedRun() history.History {
	rec := history.NewRecorder(history.NewManualClock(0))
	for w := range 3 {
		rec.Acquire(w).Fail(nil)
	}
	return rec.History()
}

func TestFromReportVerdicts(t *testing.T) {
	tests := []struct {
		name         string
		h            history.History
		claim        Claim
		expectedSafe bool
		want         ClaimVerdict
		note         string
	}{
		{"pause, unfenced, claim unsafe", pauseRun(false, true), ClaimPauseWithoutFencing, false, Reproduced, "1 lost updates, 1 stale writes accepted, critical-section linearizability violated"},
		{"pause, fenced, claim safe", pauseRun(true, true), ClaimFencingProtects, true, Reproduced, "no violation in 5 acquisitions"},
		{"pause, fenced, leases are not a mutex", pauseRun(true, true), ClaimLeasesNotMutex, false, Reproduced, "1 overlapping tenures"},
		{"pause, unfenced, claimed safe", pauseRun(false, true), ClaimFencingProtects, true, Refuted, "expected safe"},
		{"pause does not break lease exclusion", pauseRun(false, true), ClaimMajority, true, Reproduced, "no violation"},
		{"claimed unsafe, nothing happened", pauseRun(true, true), ClaimFailoverLosesLocks, false, Refuted, "not reproduced"},
		// A fenced resource fed no tokens accepts everything: the stale
		// write is caught by its lease deadline instead.
		{"no tokens: a fenced resource fences nothing", pauseRun(true, false), Claim{Text: "tokens", Property: checker.Fencing}, true, Refuted, "1 stale writes accepted, token regressions undecided"},
		{"no tokens, no stale write: fencing undecided", cleanRun(), Claim{Text: "tokens", Property: checker.Fencing}, true, NotApplicable, "no acquisition carried a fencing token"},
		{"no acquisitions", failedRun(), ClaimMajority, true, NotApplicable, "no successful acquisition in 3 attempts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := checker.Check(tt.h)
			r := FromReport("redlock-5", "pause", tt.claim, tt.expectedSafe, rep)
			if r.Verdict != tt.want || !strings.Contains(r.VerdictNote, tt.note) {
				t.Fatalf("verdict %s (%s), want %s containing %q", r.Verdict, r.VerdictNote, tt.want, tt.note)
			}
			if r.Claim != tt.claim.String() || r.Mode != "redlock-5" || r.ExpectedSafe != tt.expectedSafe {
				t.Errorf("row labels: %+v", r)
			}
		})
	}
}

func TestFromReportCounts(t *testing.T) {
	rep := checker.Check(pauseRun(false, true))
	r := FromReport("single", "pause", ClaimPauseWithoutFencing, false, rep)
	want := Row{
		Mode: "single", Scenario: "pause", Claim: ClaimPauseWithoutFencing.String(), Property: "data-integrity",
		Acquisitions: 5, Attempts: 5, Failures: 0, Faults: 1,
		Violations: 1, ValidOverlaps: 0, LostUpdates: 1, StaleAccepted: 1, StaleRejected: 0, TokenRegressions: 0,
		Linearizable: "violated", Availability: 1,
		AcquireP50Ms: rep.Latency.P50Ms(), AcquireP99Ms: rep.Latency.P99Ms(),
		ExpectedSafe: false, Verdict: Reproduced, VerdictNote: r.VerdictNote,
	}
	if r != want {
		t.Fatalf("FromReport =\n%+v\nwant\n%+v", r, want)
	}
	if r.AcquireP50Ms < 1 || r.AcquireP50Ms > 1.01 {
		t.Errorf("p50 = %v ms, want ≈1 ms (each acquire takes 1 ms on the manual clock)", r.AcquireP50Ms)
	}
	fenced := FromReport("single", "pause", ClaimFencingProtects, true, checker.Check(pauseRun(true, true)))
	if fenced.StaleRejected != 1 || fenced.StaleAccepted != 0 || fenced.LostUpdates != 0 || fenced.Linearizable != "ok" {
		t.Errorf("fenced row = %+v", fenced)
	}
}

func sampleMatrix() Matrix {
	unf := pauseRun(false, true)
	fen := pauseRun(true, true)
	return Matrix{Seed: 42, Results: []Row{
		FromReport("single", "client-pause", ClaimPauseWithoutFencing, false, checker.Check(unf)).WithTimeline(unf),
		FromReport("redlock-5+fencing", "client-pause", ClaimFencingProtects, true, checker.Check(fen)).WithTimeline(fen),
		FromReport("redlock-5", "no-acquisitions", ClaimMajority, true, checker.Check(failedRun())),
	}}
}

func TestJSONFieldNames(t *testing.T) {
	m := sampleMatrix()
	var buf bytes.Buffer
	if err := m.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if keys := sortedKeys(raw); !slices.Equal(keys, []string{"results", "seed"}) {
		t.Fatalf("top-level keys = %v, want [results seed]", keys)
	}
	var rows []map[string]any
	if err := json.Unmarshal(raw["results"], &rows); err != nil {
		t.Fatal(err)
	}
	required := []string{"mode", "scenario", "acquisitions", "failures", "violations", "lost_updates",
		"stale_accepted", "stale_rejected", "token_regressions", "keys_without_expiry", "availability", "acquire_p50_ms",
		"acquire_p99_ms", "expected_safe", "claim", "verdict"}
	for _, k := range required {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("result lacks field %q; has %v", k, sortedKeys(rows[0]))
		}
	}
	for k := range rows[0] {
		if k != strings.ToLower(k) || strings.ContainsAny(k, " -") {
			t.Errorf("field %q is not snake_case", k)
		}
	}
	if rows[0]["violations"] != 1.0 || rows[0]["expected_safe"] != false || rows[0]["verdict"] != "reproduced" {
		t.Errorf("row 0 values: %v", rows[0])
	}

	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := m
	want.Results = slices.Clone(m.Results)
	for i := range want.Results {
		want.Results[i].Timeline = nil // not part of the JSON
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestMarkdown(t *testing.T) {
	m := sampleMatrix()
	m.Results[0].Mode = "single|pipe" // must not break the table
	var buf bytes.Buffer
	if err := m.WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(out, "\n")
	var table []string
	for _, l := range lines {
		if strings.HasPrefix(l, "|") {
			table = append(table, l)
		}
	}
	if len(table) != 2+len(m.Results) {
		t.Fatalf("%d table lines, want header + separator + %d rows:\n%s", len(table), len(m.Results), out)
	}
	if !strings.Contains(table[0], "| mode | scenario |") || !strings.Contains(table[0], "verdict") {
		t.Errorf("header = %q", table[0])
	}
	if !strings.HasPrefix(table[1], "|---|") {
		t.Errorf("separator = %q", table[1])
	}
	cols := strings.Count(table[0], " | ")
	for i, row := range table[2:] {
		if got := strings.Count(row, " | "); got != cols {
			t.Errorf("row %d has %d separators, header %d: %q", i, got, cols, row)
		}
	}
	for _, want := range []string{"seed 42", "**reproduced**", "**not-applicable**", `single\|pipe`, "How to do distributed locking", "| **1** |"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestTimeline(t *testing.T) {
	tl := NewTimeline(pauseRun(false, true))
	if len(tl.Tenures) != 5 || len(tl.Overlaps) != 1 || len(tl.Faults) != 1 || !slices.Equal(tl.Workers, []int{0, 1}) {
		t.Fatalf("timeline: %d tenures, %d overlaps, %d faults, workers %v", len(tl.Tenures), len(tl.Overlaps), len(tl.Faults), tl.Workers)
	}
	kinds := map[MarkKind]int{}
	for _, m := range tl.Marks {
		kinds[m.Kind]++
	}
	if want := map[MarkKind]int{MarkAccepted: 4, MarkStale: 1}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("marks = %v, want %v", kinds, want)
	}
	fenced := NewTimeline(pauseRun(true, true))
	kinds = map[MarkKind]int{}
	for _, m := range fenced.Marks {
		kinds[m.Kind]++
	}
	if want := map[MarkKind]int{MarkAccepted: 4, MarkRejected: 1}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("fenced marks = %v, want %v", kinds, want)
	}
}

type element struct {
	name  string
	class string
}

// parse tokenises the page with a lenient XML decoder (HTML void elements
// auto-closed) and checks that every element is closed in order; the SVG
// must be well-formed XML.
func parse(t *testing.T, page string) []element {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(page))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	var out []element
	var stack []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("page does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := element{name: tok.Name.Local}
			for _, a := range tok.Attr {
				if a.Name.Local == "class" {
					e.class = a.Value
				}
			}
			out = append(out, e)
			stack = append(stack, tok.Name.Local)
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1] != tok.Name.Local {
				t.Fatalf("unbalanced </%s>, open: %v", tok.Name.Local, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements: %v", stack)
	}
	start := strings.Index(page, "<svg")
	end := strings.Index(page, "</svg>")
	if start < 0 || end < 0 {
		t.Fatal("no svg")
	}
	strict := xml.NewDecoder(strings.NewReader(page[start : end+len("</svg>")]))
	for {
		if _, err := strict.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("svg is not well-formed XML: %v", err)
		}
	}
	return out
}

func TestHTML(t *testing.T) {
	m := sampleMatrix()
	var buf bytes.Buffer
	if err := m.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	els := parse(t, page)
	count := func(name, class string) int {
		n := 0
		for _, e := range els {
			if e.name == name && (class == "" || slices.Contains(strings.Fields(e.class), class)) {
				n++
			}
		}
		return n
	}
	// Two rows have timelines, the third has none.
	if got := count("svg", ""); got != 2 {
		t.Errorf("%d svg elements, want 2", got)
	}
	// One bar per tenure: 5 in each of the two timelines.
	if got := count("rect", "tenure"); got != 10 {
		t.Errorf("%d tenure bars, want 10", got)
	}
	// The overlap: both tenures outlined and a red rect on each lane, in
	// each timeline (the fenced run overlaps too: fencing protects the data,
	// not the lock).
	if got := count("rect", "violation"); got != 4 {
		t.Errorf("%d tenure bars marked as violations, want 4", got)
	}
	if got := count("rect", "overlap"); got != 4 {
		t.Errorf("%d overlap highlights, want 4", got)
	}
	if got := count("rect", "fault"); got != 2 {
		t.Errorf("%d fault bands, want 2", got)
	}
	if got := count("line", "stale"); got != 1 {
		t.Errorf("%d stale write marks, want 1", got)
	}
	if got := count("line", "rejected"); got != 1 {
		t.Errorf("%d rejected write marks, want 1", got)
	}
	// The summary grid (a header and a row per scenario), then the table
	// of all numbers (a header and a row per result).
	scenarios := map[string]bool{}
	for _, r := range m.Results {
		scenarios[r.Scenario] = true
	}
	if got, want := count("tr", ""), 1+len(scenarios)+1+len(m.Results); got != want {
		t.Errorf("%d table rows, want %d", got, want)
	}
	for i := range m.Results {
		if !strings.Contains(page, fmt.Sprintf(`href="#cell-%d"`, i+1)) || !strings.Contains(page, fmt.Sprintf(`id="cell-%d"`, i+1)) {
			t.Errorf("the grid does not link to row %d's timeline", i+1)
		}
	}
	for _, want := range []string{"<!DOCTYPE html>", "client-pause", "pause client 0", "seed 42", "not-applicable", "Kleppmann"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "http://cdn", "src=\"http", "ZgotmplZ"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if dir := os.Getenv("REPORT_HTML_DIR"); dir != "" { // for looking at it
		if err := os.WriteFile(filepath.Join(dir, "report.html"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHTMLEscapes(t *testing.T) {
	m := Matrix{Results: []Row{{Mode: `<script>alert(1)</script>`, Scenario: `"><i>inj`, Verdict: Refuted}}}
	var buf bytes.Buffer
	if err := m.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<script>alert") || strings.Contains(buf.String(), `<i>inj`) {
		t.Fatal("mode or scenario not escaped")
	}
	parse(t, strings.Replace(buf.String(), "</body>", `<svg></svg></body>`, 1))
}

func TestNiceStep(t *testing.T) {
	tests := []struct{ end, want time.Duration }{
		{0, 1},
		{5, 1},
		{100 * time.Millisecond, 10 * time.Millisecond},
		{130 * time.Millisecond, 20 * time.Millisecond},
		{4 * time.Second, 500 * time.Millisecond},
		{9 * time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.end.String(), func(t *testing.T) {
			if got := niceStep(tt.end); got != tt.want {
				t.Errorf("niceStep(%v) = %v, want %v", tt.end, got, tt.want)
			}
		})
	}
}

// WriteHTMLFile puts each timeline in a file of its own, loaded lazily.
func TestHTMLFileTimelinesApart(t *testing.T) {
	m := Matrix{Seed: 1, Results: []Row{{Mode: "single", Scenario: "baseline", Verdict: Reproduced, ExpectedSafe: true,
		Timeline: NewTimeline(history.History{Ops: []history.Op{
			{ID: 1, Worker: 0, Kind: history.Acquire, Invoke: 1, Complete: 2, Outcome: history.Ok},
			{ID: 2, Worker: 0, Kind: history.Release, Invoke: 3, Complete: 4, Outcome: history.Ok, Lease: 1},
		}})}}}
	file := filepath.Join(t.TempDir(), "r.html")
	if err := m.WriteHTMLFile(file); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(filepath.Dir(file), "r-timelines", "cell-1.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `loading="lazy" src="r-timelines/cell-1.svg"`) || strings.Contains(string(page), "<svg") {
		t.Errorf("the page does not load its timeline lazily:\n%s", page)
	}
	if !strings.HasPrefix(string(svg), "<svg") || !strings.Contains(string(svg), "tenure") {
		t.Errorf("cell-1.svg is not the timeline:\n%s", svg)
	}
}
