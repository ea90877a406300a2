package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/localredis"
)

// help and chaos --help answer on stdout with exit 0: the commands, and
// the chaos command's usage line and flags.
func TestLabHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"usage: quorumlock-lab", "  chaos "}},
		{[]string{"chaos", "--help"}, []string{"usage: quorumlock-lab chaos [flags]", "-mutants", "-sim", "-quick"}},
	} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), tc.args, &out, &errOut); code != 0 || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: stdout lacks %q:\n%s", tc.args, w, out.String())
			}
		}
	}
}

func TestChaosList(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"chaos", "--list"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"redlock-5+fencing", "clock-jump-partition", "Expected"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--list output lacks %q:\n%s", want, out.String())
		}
	}
}

// Every bad flag value or argument exits 2 with a first line on stderr
// that says what was wrong, prefixed once; stdout stays empty.
func TestChaosBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"chaos", "--modes", "redlock-4"}, "redlock-4"},
		{[]string{"chaos", "--scenarios", "meteor"}, "meteor"},
		{[]string{"chaos", "--duration", "1s", "--lease", "1s"}, "too short for lease time 1s"},
		{[]string{"chaos", "--ci"}, "--ci needs --mutants"},
		{[]string{"chaos", "--workers", "-1"}, "--workers -1 is negative"},
		{[]string{"chaos", "--duration", "-1s"}, "may not be negative"},
		{[]string{"chaos", "--seeds", "0"}, "--seeds 0"},
		{[]string{"chaos", "--parallel", "0"}, "--parallel 0"},
		{[]string{"chaos", "--mutant", "x"}, "needs --mutants"},
		{[]string{"chaos", "--mutants", "--sim", "--repeat", "0"}, "--repeat 0"},
		{[]string{"chaos", "--mutants", "--repeat", "3"}, "--repeat needs --mutants --sim"},
		{[]string{"chaos", "--sim", "--repeat", "3"}, "--repeat needs --mutants --sim"},
		{[]string{"chaos", "--modes", "nosuch", "--list"}, "nosuch"},
		{[]string{"chaos", "extra"}, "unexpected arguments"},
		{[]string{"chaos", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"nosuch"}, `unknown command "nosuch"`},
		{nil, "usage: quorumlock-lab"},
	} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), tc.args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		msg := errOut.String()
		first := strings.SplitN(msg, "\n", 2)[0]
		if !strings.Contains(first, "quorumlock-lab") || !strings.Contains(msg, tc.want) || out.Len() != 0 ||
			strings.Contains(first, "quorumlock: ") || strings.Count(first, "chaos: ") > 1 {
			t.Errorf("%v: stderr %q (want %q in it, one prefix), stdout %q", tc.args, msg, tc.want, out.String())
		}
	}
}

// One real cell end to end: the table on stdout, the JSON and HTML files
// with the fields the issue asks for, exit status 0 (no violation where
// safety is expected).
func TestChaosRun(t *testing.T) {
	if _, err := localredis.Find(); err != nil {
		if localredis.Required() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "out.json"), filepath.Join(dir, "report.html")
	var progress bytes.Buffer
	chaosProgress = &progress
	t.Cleanup(func() { chaosProgress = os.Stderr })
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"chaos", "--quick", "--duration", "2500ms", "--modes", "single", "--scenarios", "baseline",
		"--json", jsonPath, "--html", htmlPath}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s\n%s", code, errOut.String(), out.String(), progress.String())
	}
	if !strings.Contains(out.String(), "| 1 | single | baseline |") {
		t.Errorf("no table row on stdout:\n%s", out.String())
	}
	if !strings.Contains(progress.String(), "[1/1] single × baseline") {
		t.Errorf("no progress line:\n%s", progress.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Seed    *int64           `json:"seed"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Seed == nil || len(doc.Results) != 1 {
		t.Fatalf("JSON: seed %v, %d results", doc.Seed, len(doc.Results))
	}
	for _, k := range []string{"mode", "scenario", "acquisitions", "failures", "violations", "lost_updates", "stale_accepted",
		"stale_rejected", "token_regressions", "keys_without_expiry", "availability", "acquire_p50_ms", "acquire_p99_ms", "expected_safe"} {
		if _, ok := doc.Results[0][k]; !ok {
			t.Errorf("JSON result lacks %q", k)
		}
	}
	for _, k := range []string{"contested", "replay", "judged"} {
		if _, ok := doc.Results[0][k]; !ok {
			t.Errorf("JSON result lacks %q", k)
		}
	}
	// The page links the timeline, which lives in a file of its own.
	h, err := os.ReadFile(htmlPath)
	if err != nil || !strings.Contains(string(h), `href="#cell-1"`) || !strings.Contains(string(h), "-timelines/cell-1.svg") {
		t.Errorf("HTML report without its grid and lazy timeline (err %v)", err)
	}
	svgPath := strings.TrimSuffix(htmlPath, filepath.Ext(htmlPath)) + "-timelines/cell-1.svg"
	if svg, err := os.ReadFile(svgPath); err != nil || !strings.Contains(string(svg), "<svg") {
		t.Errorf("no timeline file %s (err %v)", svgPath, err)
	}
}
