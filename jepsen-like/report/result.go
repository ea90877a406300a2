package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// ClaimVerdict says what one row's run did to the claim it tested.
type ClaimVerdict string

const (
	// Reproduced: the run behaved as the claim predicts — violations seen
	// where the claim says the configuration is unsafe, none where it says
	// it is safe.
	Reproduced ClaimVerdict = "reproduced"
	// Refuted: the run contradicted the prediction — violations where the
	// claim says safe, or none where it says unsafe (for an unsafe claim
	// this means "not reproduced by this run": the faults may have been too
	// weak or too short).
	Refuted ClaimVerdict = "refuted"
	// NotApplicable: the run cannot speak to the claim — no successful
	// acquisition, an invalid history, or the relevant checks undecided.
	NotApplicable ClaimVerdict = "not-applicable"
	// Inconclusive: expected safe and no violation, but too few contested
	// acquisitions (attempts made while a fault was in effect and another
	// client held a valid lease) to call it safe.
	Inconclusive ClaimVerdict = "inconclusive"
)

// Row is one row of the matrix: one mode × one scenario. The JSON field
// names are part of the report's format.
type Row struct {
	Mode     string `json:"mode"`
	Scenario string `json:"scenario"`
	// Claim is the statement tested, naming its source in the literature.
	Claim string `json:"claim"`
	// Property names the checks that count as evidence for or against the
	// claim (a checker.Property).
	Property string `json:"property"`

	// Acquisitions is the number of successful acquisitions; Attempts all
	// acquire calls; Failures those that did not succeed (failed or of
	// unknown outcome), Unknown the latter alone.
	Acquisitions int `json:"acquisitions"`
	Attempts     int `json:"attempts"`
	Failures     int `json:"failures"`
	Unknown      int `json:"unknown"`
	Faults       int `json:"faults"`

	// Violations is the number of overlapping tenure pairs (mutual
	// exclusion as the clients saw it); ValidOverlaps the pairs of leases
	// that were valid at once.
	Violations       int `json:"violations"`
	ValidOverlaps    int `json:"valid_overlaps"`
	LostUpdates      int `json:"lost_updates"`
	StaleAccepted    int `json:"stale_accepted"`
	StaleRejected    int `json:"stale_rejected"`
	TokenRegressions int `json:"token_regressions"`
	// KeysWithoutExpiry counts the lock keys left on the nodes without a
	// TTL after the run, fencing counters excepted (the Expiry
	// property): any is a failure, whatever the mode.
	KeysWithoutExpiry int `json:"keys_without_expiry"`
	// Linearizable is the combined porcupine verdict of the register and
	// critical-section checks: ok, violated or unknown.
	Linearizable string `json:"linearizable"`

	Availability float64 `json:"availability"`
	AcquireP50Ms float64 `json:"acquire_p50_ms"`
	AcquireP99Ms float64 `json:"acquire_p99_ms"`

	// Judged lists, comma-separated, the properties the row is judged on:
	// the claim's, then "expiry", "token-order" (fenced modes), "liveness"
	// (cells that expect progress).
	Judged string `json:"judged,omitempty"`
	// Broken names the properties besides the claim's that the row is
	// judged on and that did not hold, with counts (empty when all held).
	// Any fails the run, whether the claim was expected safe or not: a
	// client pause may be expected to break data integrity, never to make
	// the lock grant two valid leases.
	Broken string `json:"broken,omitempty"`
	// MissedSignals counts tenures whose lease was taken over (another
	// client acquired after the lease's validity) while the holder still
	// acted and had not been told (Done not closed) within a grace period;
	// WritesAfterSignal the writes a client made after its lease had told
	// it that it ended (the client's doing, as in a pause: counted, not
	// judged).
	// Contested is the number of acquire attempts made while a fault was
	// in effect (any time in a scenario without faults) and another client
	// held a valid lease: the moments that test a lock.
	Contested int `json:"contested"`
	// FaultEvents counts the strikes of the cell's faults: fault windows
	// that began apart from each other (faults injected together, as a
	// majority crashed at once, are one event; the cell's whole-run
	// setting, such as a clock rate or a split, is none). Set by the matrix.
	FaultEvents int `json:"fault_events"`
	// Seeds is how many seeds ran this cell (0 or 1: only the run's own);
	// SeedsReproduced how many of them reproduced the expectation (for an
	// expected-unsafe cell: showed the violation), the run's own included,
	// and ReproducedIn which (comma-separated, to replay one). Set by the
	// matrix for expected-unsafe cells run over several seeds.
	Seeds           int    `json:"seeds,omitempty"`
	SeedsReproduced int    `json:"seeds_reproduced,omitempty"`
	ReproducedIn    string `json:"reproduced_in,omitempty"`
	// Replay is the command that runs this cell again with the same seed.
	Replay            string `json:"replay,omitempty"`
	MissedSignals     int    `json:"missed_signals"`
	WritesAfterSignal int    `json:"writes_after_signal"`

	// ExpectedSafe is what the claim predicts for this mode and scenario.
	ExpectedSafe bool         `json:"expected_safe"`
	Verdict      ClaimVerdict `json:"verdict"`
	// VerdictNote explains the verdict with counts.
	VerdictNote string `json:"verdict_note"`

	// Timeline, when set, is drawn in the HTML page. Not part of the JSON.
	Timeline *Timeline `json:"-"`
}

// FromReport fills a row from a checker report: the counts, the latency,
// and the verdict on the claim given what it expects.
func FromReport(mode, scenario string, claim Claim, expectedSafe bool, r checker.Report) Row {
	prop := claim.Property
	if prop == "" {
		prop = checker.Safety
	}
	res := Row{
		Mode:              mode,
		Scenario:          scenario,
		Claim:             claim.String(),
		Property:          string(prop),
		Acquisitions:      r.Acquires.Ok,
		Attempts:          r.Acquires.Attempted,
		Failures:          r.Acquires.Failed + r.Acquires.Unknown,
		Unknown:           r.Acquires.Unknown,
		Faults:            r.Faults,
		Violations:        r.MutualExclusion.Count,
		ValidOverlaps:     r.LeaseExclusion.Count,
		LostUpdates:       r.LostUpdates.Count,
		StaleAccepted:     r.StaleAccepted.Count,
		StaleRejected:     r.StaleRejected.Count,
		TokenRegressions:  r.TokenOrder.Count,
		Contested:         r.Contested,
		MissedSignals:     r.Signals.Count,
		WritesAfterSignal: r.WritesAfterSignal,
		Linearizable:      string(combine(r.Register.Verdict, r.CriticalSections.Verdict)),
		Availability:      r.Acquires.Availability,
		AcquireP50Ms:      r.Latency.P50Ms(),
		AcquireP99Ms:      r.Latency.P99Ms(),
		ExpectedSafe:      expectedSafe,
	}
	res.Verdict, res.VerdictNote = judge(expectedSafe, prop, r)
	return res
}

// SeedsCell is "k/n" for a row run over several seeds (the seeds that
// reproduced its expectation of n), "" otherwise.
func (r Row) SeedsCell() string {
	if r.Seeds <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", r.SeedsReproduced, r.Seeds)
}

// WithExpiry returns r with the lock keys the run left without expiry
// counted; any turns the verdict to refuted (a lock that never frees itself
// is a bug in every configuration).
func (r Row) WithExpiry(keys []string) Row {
	r.KeysWithoutExpiry = len(keys)
	if len(keys) > 0 {
		r.Verdict = Refuted
		r.VerdictNote = fmt.Sprintf("%d lock keys left without expiry (%s); %s", len(keys), strings.Join(keys, ", "), r.VerdictNote)
	}
	return r
}

// WithTimeline returns r with a timeline of the history it was checked on,
// for the HTML page.
func (r Row) WithTimeline(h history.History) Row {
	r.Timeline = NewTimeline(h)
	return r
}

func combine(vs ...checker.Verdict) checker.Verdict {
	out := checker.Ok
	for _, v := range vs {
		switch {
		case v == checker.Violated:
			return checker.Violated
		case v != checker.Ok:
			out = checker.Unknown
		}
	}
	return out
}

func judge(expectedSafe bool, p checker.Property, r checker.Report) (ClaimVerdict, string) {
	if r.HistoryError != "" {
		return NotApplicable, "invalid history: " + r.HistoryError
	}
	if r.Acquires.Ok == 0 {
		return NotApplicable, fmt.Sprintf("no successful acquisition in %d attempts: nothing to judge", r.Acquires.Attempted)
	}
	s := r.Summarize(p)
	n := r.Acquires.Ok
	switch s.Verdict {
	case checker.Violated:
		if expectedSafe {
			return Refuted, fmt.Sprintf("expected safe (%s), observed %s in %d acquisitions", p, s.Detail, n)
		}
		return Reproduced, fmt.Sprintf("expected unsafe (%s), observed %s in %d acquisitions", p, s.Detail, n)
	case checker.Ok:
		if expectedSafe {
			return Reproduced, fmt.Sprintf("expected safe (%s), no violation in %d acquisitions", p, n)
		}
		return Refuted, fmt.Sprintf("expected unsafe (%s), but no violation in %d acquisitions: not reproduced by this run", p, n)
	}
	return NotApplicable, fmt.Sprintf("%s undecided: %s", p, s.Detail)
}

// Matrix is the report of a run of modes × scenarios.
type Matrix struct {
	// Seed made the run's random choices (fault timing, worker delays).
	Seed    int64 `json:"seed"`
	Results []Row `json:"results"`

	svgDir string // WriteHTMLFile: where the timelines are
}

// WriteJSON writes the matrix as indented JSON: {"seed": …, "results": […]}.
func (m Matrix) WriteJSON(w io.Writer) error {
	if m.Results == nil {
		m.Results = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// ReadJSON reads a matrix written by WriteJSON.
func ReadJSON(r io.Reader) (Matrix, error) {
	var m Matrix
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return Matrix{}, fmt.Errorf("report: decode: %w", err)
	}
	return m, nil
}
