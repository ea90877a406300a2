package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// Verdict is the three-way outcome of one check.
type Verdict string

const (
	// Ok: the check ran to the end and found no violation.
	Ok Verdict = "ok"
	// Violated: the check found at least one violation; Count and Examples
	// say how many and which.
	Violated Verdict = "violated"
	// Unknown: the check could not decide (operations with unknown outcome,
	// missing tokens or deadlines, a timeout); Note says why.
	Unknown Verdict = "unknown"
)

// Example is one violation: the operations involved and a sentence.
type Example struct {
	Ops  []history.OpID `json:"ops"`
	Note string         `json:"note"`
}

// Result is the result of one check. Count is the number of violations
// (its unit is the check's; see each field of [Report]); Examples hold the
// first few of them.
type Result struct {
	Verdict  Verdict   `json:"verdict"`
	Count    int       `json:"count"`
	Examples []Example `json:"examples,omitempty"`
	Note     string    `json:"note,omitempty"`
}

func (r Result) String() string {
	s := fmt.Sprintf("%s (%d)", r.Verdict, r.Count)
	if r.Note != "" {
		s += ": " + r.Note
	}
	return s
}

// Acquisitions counts acquire attempts by outcome, but for those still
// under way when the run stopped (history.MetaRunEnd).
type Acquisitions struct {
	Attempted int `json:"attempted"`
	Ok        int `json:"ok"`
	Failed    int `json:"failed"`
	Unknown   int `json:"unknown"`
	// Availability is Ok / Attempted (0 when nothing was attempted).
	Availability float64 `json:"availability"`
}

// AcquireLatency summarises invoke→complete of Ok acquisitions (nearest-rank
// percentiles; zero when there were none).
type AcquireLatency struct {
	Samples int           `json:"samples"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
}

// P50Ms is P50 in milliseconds.
func (l AcquireLatency) P50Ms() float64 { return float64(l.P50) / float64(time.Millisecond) }

// P99Ms is P99 in milliseconds.
func (l AcquireLatency) P99Ms() float64 { return float64(l.P99) / float64(time.Millisecond) }

// LostUpdates is the lost-update check: Count is the number of accepted
// writes that overwrote a value their writer had not read. Accepted and
// Final restate the counter's arithmetic: every accepted write should have
// added one, so Final should equal Accepted; Deficit = Accepted − Final.
type LostUpdates struct {
	Result
	Accepted int   `json:"accepted"`
	Final    int64 `json:"final"`
	Deficit  int64 `json:"deficit"`
}

// Report is the result of every check over one history.
type Report struct {
	Ops      int            `json:"ops"`
	Workers  int            `json:"workers"`
	Tenures  int            `json:"tenures"`
	Faults   int            `json:"faults"`
	Acquires Acquisitions   `json:"acquisitions"`
	Latency  AcquireLatency `json:"acquire_latency"`

	// MutualExclusion: overlapping tenures. Count is the number of pairs of
	// tenures of different workers that overlap (acquire completion →
	// release invocation). Never Unknown.
	MutualExclusion Result `json:"mutual_exclusion"`
	// LeaseExclusion: the same over the valid part of each tenure (until
	// its lease's validity deadline): pairs of leases valid at once, which
	// the lock itself promised never to grant. Unknown when the lock reports
	// no deadlines.
	LeaseExclusion Result `json:"lease_exclusion"`
	// LostUpdates: see [LostUpdates].
	LostUpdates LostUpdates `json:"lost_updates"`
	// StaleAccepted: accepted writes that were stale — a token lower than
	// one already accepted, or written after the writer's lease had expired
	// and after a later holder (one whose lease began after it) had written.
	// Unknown when some accepted write had neither a token nor a deadline to
	// judge it by.
	StaleAccepted Result `json:"stale_accepted"`
	// StaleRejected: writes a fenced resource rejected. Always Ok: a
	// rejection is the fence doing its job; Count says how often.
	StaleRejected Result `json:"stale_rejected"`
	// TokenOrder: Ok acquisitions ordered by completion must carry strictly
	// increasing tokens among those that exclude each other (per lock name;
	// a reader's token tops every earlier writer's, a writer's every
	// earlier holder's); Count is the number of acquisitions whose token is
	// not above every earlier one. Unknown when no acquisition had a token.
	TokenOrder Result `json:"token_order"`
	// Signals: the lease-loss signal. Count is the number of tenures whose
	// lease was taken over — another worker's tenure began after this
	// lease's validity ended, while its holder still held — and whose
	// holder had not been told (a Signal op) within the grace period after
	// the takeover (WithSignalGrace), while it still held. Unknown when the
	// leases do not signal (no "signals" label) or report no deadlines.
	Signals Result `json:"signals"`
	// Wakeups: a free lock is taken within the wakeup bound while
	// workers wait, also when unlock messages are lost (see
	// [WithWakeupBound]); Count is the number of releases after which a
	// waiter was left waiting past the bound. Unknown without a bound.
	Wakeups Result `json:"wakeups"`
	// Starvation: no waiter is passed over again and again (see
	// [WithStarveBound]); Count is the number of acquires that more than
	// the bound of other workers' acquires, invoked after them, completed
	// before. Unknown without a bound.
	Starvation Result `json:"starvation"`
	// WritesAfterSignal counts writes made under a lease after it had
	// signalled its end: the client acted although told (a pause between
	// its check and its write). Counted, not a verdict.
	WritesAfterSignal int `json:"writes_after_signal"`
	// Contested counts the acquire attempts that tested the lock: Lock
	// calls during which another worker held a valid lease while a fault
	// (not a held critical section) was in effect — any time, when the
	// history has no fault. A safe verdict on few of them is weak
	// evidence.
	Contested int `json:"contested"`
	// SignalFirst: renewed leases. Count is the number of pairs of
	// tenures that exclude each other and overlap once each is cut at its
	// loss signal (less the signal grace): a holder told of the loss only
	// after another holder's tenure began, or never. Unknown when the
	// leases do not signal.
	SignalFirst Result `json:"signal_first"`
	// WriterProgress: read-write locks. Count is the number of writers'
	// Lock calls (each bounded by the workload's acquire timeout) that did
	// not obtain the lock although it stood free for the wakeup bound
	// during them, with no fault in effect. Unknown when the history has
	// no writer or no wakeup bound is given.
	WriterProgress Result `json:"writer_progress"`
	// FairOrder: fair locks. Count is the number of pairs of waiters
	// granted out of arrival order (see WithFairSlack). Unknown when the
	// history has no fair waiter.
	FairOrder Result `json:"fair_order"`
	// Election: the election's terms and its followers' deliveries (see
	// ElectionResults). Unknown when the history has no term.
	Election ElectionResults `json:"election"`
	// FairProgress: fair locks. Count is the number of stretches longer
	// than the fair bound (WithFairBound), with no fault in effect, during
	// which fair waiters waited and nobody was granted: a line stuck
	// behind a waiter that died. Unknown when no bound is given or the
	// history has no fair waiter.
	FairProgress Result `json:"fair_progress"`
	// AllOrNone: locks over several names (MutexAll). Count is the number
	// of pairs of tenures sharing a name that overlap where one of them
	// holds several names: a grant that did not hold all of its names.
	// Unknown when no tenure holds several names.
	AllOrNone Result `json:"all_or_none"`
	// GuardOrder: writes through a fenced store outside the lock (the
	// guarded workload). Count is the number of accepted writes whose
	// token is not above one accepted earlier from another tenure, plus
	// the refused writes whose token was not below the guard's last
	// accepted one. Unknown when the history has no guard write.
	GuardOrder Result `json:"guard_order"`
	// Register: porcupine's linearizability check of the counter as a
	// read/write register. Unknown on timeout.
	Register Result `json:"register"`
	// CriticalSections: porcupine's linearizability check of each holder's
	// read-then-write as one atomic compare-and-set. Unknown on timeout.
	CriticalSections Result `json:"critical_sections"`

	// HistoryError is set when the history failed validation; every check
	// is then Unknown.
	HistoryError string `json:"history_error,omitempty"`
}

// Property groups the checks that bear on one claim.
type Property string

const (
	// MutualExclusion: no two workers believed they held the lock at once.
	MutualExclusion Property = "mutual-exclusion"
	// LeaseExclusion: no two leases were valid at once.
	LeaseExclusion Property = "lease-exclusion"
	// DataIntegrity: the resource's data is what a serial execution would
	// give — no lost updates, no stale write accepted, both
	// linearizability checks pass.
	DataIntegrity Property = "data-integrity"
	// Fencing: tokens strictly increase and no stale write was accepted.
	Fencing Property = "fencing"
	// Safety: all of the above.
	Safety Property = "safety"
	// LossSignal: no lease was taken over while its holder had not been
	// told of the loss (the Signals check, WithSignalGrace). Not part of
	// Safety: it judges what a lock tells its holder, not what happened.
	LossSignal Property = "loss-signal"
	// SignalFirst: a renewed lease's holder is told of the loss before
	// another holder's tenure begins (the SignalFirst check).
	SignalFirst Property = "signal-first"
	// WriterProgress: writers of a read-write lock are not starved (the
	// WriterProgress check).
	WriterProgress Property = "writer-progress"
	// FairOrder: a fair lock grants in arrival order (the FairOrder
	// check), and its line moves on within the fair bound when a waiter
	// dies (the FairProgress check).
	FairOrder Property = "fair-order"
	// AllOrNone: a lock over several names (MutexAll) holds every one of
	// them or none (the AllOrNone check).
	AllOrNone Property = "all-or-none"
	// GuardOrder: a fenced store outside the lock accepts each tenure's
	// token only above every token it accepted before, and refuses no
	// write whose token is not below them (the GuardOrder check).
	GuardOrder Property = "guard-order"
	// FreeLockTaken: waiters take a free lock within the wakeup bound,
	// whether or not they heard its unlock message (the Wakeups check).
	// A liveness property, not part of Safety.
	FreeLockTaken Property = "free-lock-taken"
	// ElectionTerms: an election's promise — one leader per term, terms
	// that increase, a lost term told before its successor begins (the
	// SignalFirst check), every term delivered to followers, a free
	// election filled in time, and each term's value read as a
	// linearizable register (the Election checks).
	ElectionTerms Property = "election"
	// NoStarvation: every waiter gets its turn (the Starvation check) and
	// a free lock is taken within the wakeup bound (Wakeups): many
	// clients waiting on one name, where a release wakes one of them.
	NoStarvation Property = "no-starvation"
)

// Properties lists every Property.
var Properties = []Property{MutualExclusion, LeaseExclusion, DataIntegrity, Fencing, Safety, LossSignal, FreeLockTaken, NoStarvation, SignalFirst, WriterProgress, FairOrder, ElectionTerms, AllOrNone, GuardOrder}

// Summary is the combined outcome of the checks behind a Property.
type Summary struct {
	// Verdict is Violated if any check is, else Unknown if any is, else Ok.
	Verdict Verdict
	// Violations is the sum of the violated checks' counts.
	Violations int
	// Detail names the violated or undecided checks with their counts.
	Detail string
}

type namedResult struct {
	name    string // what is counted, or the check's name when verdictOnly
	r       Result
	verdict bool // a yes/no check: report "violated", not a count
}

func (r Report) checks(p Property) []namedResult {
	me := namedResult{name: "overlapping tenures", r: r.MutualExclusion}
	le := namedResult{name: "overlapping valid leases", r: r.LeaseExclusion}
	lu := namedResult{name: "lost updates", r: r.LostUpdates.Result}
	sa := namedResult{name: "stale writes accepted", r: r.StaleAccepted}
	to := namedResult{name: "token regressions", r: r.TokenOrder}
	rg := namedResult{name: "register linearizability", r: r.Register, verdict: true}
	cs := namedResult{name: "critical-section linearizability", r: r.CriticalSections, verdict: true}
	switch p {
	case LossSignal:
		return []namedResult{{name: "leases taken over before their holders were told", r: r.Signals}}
	case SignalFirst:
		return []namedResult{{name: "holders told after a takeover", r: r.SignalFirst}}
	case WriterProgress:
		return []namedResult{{name: "writers starved", r: r.WriterProgress}}
	case FairOrder:
		return []namedResult{{name: "grants out of arrival order", r: r.FairOrder}, {name: "fair lines stuck past the bound", r: r.FairProgress}}
	case ElectionTerms:
		return []namedResult{{name: "terms with two leaders", r: r.Election.OneLeader},
			{name: "terms not above an earlier one", r: r.Election.TermsIncrease},
			{name: "holders told after a successor's term began", r: r.SignalFirst},
			{name: "terms not delivered in order to a follower", r: r.Election.Observed},
			{name: "terms not replaced within the bound", r: r.Election.Replaced},
			{name: "terms whose value reads are not linearizable", r: r.Election.Values}}
	case AllOrNone:
		return []namedResult{{name: "several-name grants missing a name", r: r.AllOrNone}}
	case GuardOrder:
		return []namedResult{{name: "guard writes out of token order", r: r.GuardOrder}}
	case FreeLockTaken:
		return []namedResult{{name: "free locks left untaken past the wakeup bound", r: r.Wakeups}}
	case NoStarvation:
		return []namedResult{{name: "waiters passed over past the starvation bound", r: r.Starvation},
			{name: "free locks left untaken past the wakeup bound", r: r.Wakeups}}
	case MutualExclusion:
		return []namedResult{me}
	case LeaseExclusion:
		return []namedResult{le}
	case DataIntegrity:
		return []namedResult{lu, sa, rg, cs}
	case Fencing:
		return []namedResult{to, sa}
	case Safety:
		return []namedResult{me, le, lu, sa, to, rg, cs}
	}
	return nil
}

// Summarize combines the checks behind p. An unknown Property is Unknown.
func (r Report) Summarize(p Property) Summary {
	checks := r.checks(p)
	if len(checks) == 0 {
		return Summary{Verdict: Unknown, Detail: fmt.Sprintf("unknown property %q", p)}
	}
	s := Summary{Verdict: Ok}
	var violated, unknown []string
	for _, c := range checks {
		switch c.r.Verdict {
		case Violated:
			s.Violations += c.r.Count
			if c.verdict {
				violated = append(violated, c.name+" violated")
			} else {
				violated = append(violated, fmt.Sprintf("%d %s", c.r.Count, c.name))
			}
		case Ok:
		default:
			note := c.name + " undecided"
			if c.r.Note != "" {
				note += " (" + c.r.Note + ")"
			}
			unknown = append(unknown, note)
		}
	}
	switch {
	case len(violated) > 0:
		s.Verdict = Violated
	case len(unknown) > 0:
		s.Verdict = Unknown
	}
	s.Detail = strings.Join(append(violated, unknown...), ", ")
	return s
}

type config struct {
	grace       time.Duration
	fairSlack   time.Duration
	fairBound   time.Duration
	timeout     time.Duration
	maxExamples int
	skipLinear  bool
	wakeupBound time.Duration
	starveBound int
	// clientFaults: the faults strike clients only (WithClientFaults).
	clientFaults bool
}

// Option configures [Check].
type Option func(*config)

// WithTimeout bounds each porcupine linearizability check (default 10 s);
// a check that runs out of time is Unknown. A violated check re-runs in
// verbose mode within what is left of its budget to name an operation, so
// the two checks together take at most about 2·d. d ≤ 0 keeps the default.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithSignalGrace is how long after a takeover a holder may still go
// untold before the Signals check counts it (default 200 ms): the signal
// of a correct lock comes at the lease's validity end, before any
// takeover, give or take a timer's delay on a loaded machine.
func WithSignalGrace(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.grace = d
		}
	}
}

// WithFairBound is the longest a fair lock's line may go without a
// grant while waiters wait and no fault is in effect (Report.FairProgress):
// a waiter that died is dropped from the line one entry timeout after its
// last refresh (the client's TTL), a holder lets go within its lease, and
// the next waiter then takes the lock within the wakeup bound. Zero (the
// default) leaves FairProgress Unknown.
func WithFairBound(d time.Duration) Option {
	return func(c *config) { c.fairBound = d }
}

// WithFairSlack is how much earlier a fair waiter must have called Lock
// than another to count as queued ahead of it (default 50 ms: a waiter
// reaches the queue on the nodes within one attempt).
func WithFairSlack(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.fairSlack = d
		}
	}
}

// WithMaxExamples sets how many examples each Result keeps (default 5;
// n < 0 keeps the default, 0 keeps none). Counts are always complete.
func WithMaxExamples(n int) Option {
	return func(c *config) {
		if n >= 0 {
			c.maxExamples = n
		}
	}
}

// WithoutLinearizability skips the two porcupine checks (they are reported
// Unknown, "skipped"): the rest is linear in the history's size, which
// suits drawing or a quick look.
func WithoutLinearizability() Option {
	return func(c *config) { c.skipLinear = true }
}

// Check runs every check over h.
func Check(h history.History, opts ...Option) Report {
	cfg := config{timeout: 10 * time.Second, maxExamples: 5, grace: 200 * time.Millisecond, fairSlack: 50 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	ix := newIndex(h)
	r := Report{
		Ops:     len(h.Ops),
		Workers: len(h.Workers()),
		Tenures: len(ix.tenures),
		Faults:  len(Windows(h)),
	}
	if err := h.Validate(); err != nil {
		r.HistoryError = err.Error()
		u := Result{Verdict: Unknown, Note: "history invalid"}
		r.MutualExclusion, r.LeaseExclusion, r.StaleAccepted, r.StaleRejected = u, u, u, u
		r.TokenOrder, r.Register, r.CriticalSections, r.Signals, r.Wakeups, r.Starvation = u, u, u, u, u, u
		r.SignalFirst, r.WriterProgress, r.FairOrder, r.FairProgress, r.AllOrNone, r.GuardOrder = u, u, u, u, u, u
		r.Election = ElectionResults{u, u, u, u, u}
		r.LostUpdates = LostUpdates{Result: u}
		return r
	}
	ex := examples{max: cfg.maxExamples}
	r.Acquires, r.Latency = acquisitions(h)
	r.MutualExclusion = checkOverlaps(ix, false, ex)
	r.LeaseExclusion = checkOverlaps(ix, true, ex)
	r.LostUpdates = checkLostUpdates(ix, ex)
	r.StaleAccepted, r.StaleRejected = checkStale(ix, ex)
	r.TokenOrder = checkTokenOrder(ix, ex)
	r.Signals, r.WritesAfterSignal = checkSignals(ix, cfg.grace, ex)
	r.SignalFirst = checkSignalFirst(ix, cfg.grace, ex)
	r.WriterProgress = checkWriterProgress(h, ix, cfg.wakeupBound, ex)
	r.FairOrder = checkFairOrder(h, cfg.fairSlack, ex)
	r.FairProgress = checkFairProgress(h, cfg.fairSlack, cfg.fairBound, ex)
	r.AllOrNone = checkAllOrNone(ix, ex)
	r.GuardOrder = checkGuardOrder(h, ex)
	r.Wakeups = checkWakeups(h, ix, cfg.wakeupBound, ex)
	r.Starvation = checkStarvation(h, cfg.starveBound, ex)
	r.Election = checkElection(h, ix, cfg.wakeupBound, cfg.clientFaults, ex)
	r.Contested = contested(h, ix)
	if cfg.skipLinear {
		r.Register = Result{Verdict: Unknown, Note: "skipped"}
		r.CriticalSections = r.Register
		r.Election.Values = r.Register
		return r
	}
	r.Election.Values = checkValues(h, cfg.timeout, ex)
	r.Register = checkRegister(h, cfg.timeout)
	r.CriticalSections = checkCriticalSections(ix, cfg.timeout)
	return r
}

// examples collects at most max examples into a Result.
type examples struct{ max int }

func (e examples) add(r *Result, note string, ops ...history.OpID) {
	r.Count++
	if len(r.Examples) < e.max {
		r.Examples = append(r.Examples, Example{Ops: ops, Note: note})
	}
}
