package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// markdownColumns are the table's columns, in order.
var markdownColumns = []string{
	"mode", "scenario", "acq", "fail", "avail", "p50 ms", "p99 ms",
	"overlaps", "valid overlaps", "lost", "stale acc", "stale rej", "token reg", "no ttl", "linearizable",
	"contested", "fault events", "expected", "verdict", "seeds k/n",
}

// WriteMarkdown writes the matrix as a Markdown table, one row per result,
// followed by the claims and verdict notes as a numbered list.
func (m Matrix) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "seed %d — %d results\n\n", m.Seed, len(m.Results))
	fmt.Fprintf(bw, "| # | %s |\n", strings.Join(markdownColumns, " | "))
	fmt.Fprintf(bw, "|---|%s\n", strings.Repeat("---|", len(markdownColumns)))
	for i, r := range m.Results {
		expected := "unsafe"
		if r.ExpectedSafe {
			expected = "safe"
		}
		cells := []string{
			cell(r.Mode), cell(r.Scenario),
			fmt.Sprint(r.Acquisitions), fmt.Sprint(r.Failures),
			fmt.Sprintf("%.3f", r.Availability),
			fmt.Sprintf("%.2f", r.AcquireP50Ms), fmt.Sprintf("%.2f", r.AcquireP99Ms),
			count(r.Violations), count(r.ValidOverlaps), count(r.LostUpdates),
			count(r.StaleAccepted), fmt.Sprint(r.StaleRejected), count(r.TokenRegressions), count(r.KeysWithoutExpiry),
			cell(r.Linearizable), fmt.Sprint(r.Contested), fmt.Sprint(r.FaultEvents), expected, "**" + string(r.Verdict) + "**",
			r.SeedsCell(),
		}
		fmt.Fprintf(bw, "| %d | %s |\n", i+1, strings.Join(cells, " | "))
	}
	if len(m.Results) > 0 {
		fmt.Fprintln(bw)
		for i, r := range m.Results {
			judged := ""
			if r.Judged != "" {
				judged = " (judged on " + r.Judged + ")"
			}
			broken := ""
			if r.Broken != "" {
				broken = " BROKEN: " + r.Broken + "."
			}
			fmt.Fprintf(bw, "%d. %s — %s%s;%s replay: `%s`\n", i+1, cell(r.Claim), cell(r.VerdictNote), judged, cell(broken), r.Replay)
		}
	}
	return bw.Flush()
}

// count bolds a non-zero violation count so it stands out in the terminal.
func count(n int) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("**%d**", n)
}

// cell keeps text from breaking the table.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}
