// Package report renders the results of a matrix of lock modes × fault
// scenarios: JSON for machines, a Markdown table for the terminal, and a
// self-contained HTML page with a timeline per run.
//
// # Rows and verdicts
//
// A [Row] is one run (mode × scenario), filled from a checker.Report by
// [FromReport]. Each row tests a [Claim] from the literature — Kleppmann's
// "How to do distributed locking", the Redlock spec on redis.io, antirez's
// reply "Is Redlock safe?", Jepsen's etcd 3.4.3 lock finding — and says
// whether that mode under that scenario is expected safe. The claim's
// Property picks the checks that count as evidence (checker.Summarize), and
// the verdict is:
//
//   - reproduced: violations seen and the claim said unsafe, or none seen
//     and it said safe;
//   - refuted: the opposite (for an "unsafe" claim: not reproduced by this
//     run — the faults may have been too weak);
//   - not-applicable: no successful acquisition, an invalid history, or the
//     relevant checks undecided (Unknown).
//
// VerdictNote restates the verdict with the counts behind it.
//
// # Formats
//
// [Matrix.WriteJSON] writes {"seed": …, "results": [...]} with the
// snake_case field names of [Row]. [Matrix.WriteMarkdown] writes one table
// row per result and the claims below it. [Matrix.WriteHTML] writes one page
// (html/template, inline CSS and SVG, no scripts, no external assets): the
// summary table, then per scenario each mode's verdict and, when the row has
// a [Timeline] ([Row.WithTimeline]), a timeline: one lane per client,
// tenures as bars (lighter after the lease's validity deadline), overlaps
// between clients in red, writes as ticks (red when stale or lost, orange
// when fenced off), nemesis fault windows as shaded bands.
package report
