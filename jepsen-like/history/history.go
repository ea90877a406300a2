package history

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// OpID identifies an operation within one history. IDs start at 1 and follow
// invoke order; 0 means "none".
type OpID int64

// Nemesis is the worker id of fault events.
const Nemesis = -1

// Kind is what an operation did.
type Kind string

// The kinds of operation.
const (
	Acquire      Kind = "acquire"
	Extend       Kind = "extend"
	Read         Kind = "read"
	Write        Kind = "write"
	Release      Kind = "release"
	NemesisStart Kind = "nemesis-start"
	NemesisEnd   Kind = "nemesis-end"
	// Signal: the lease told its holder that it ended (its Done channel
	// closed) before the holder released it. Invoke and Complete are when
	// the holder saw it; Lease is the acquire.
	Signal Kind = "signal"
	// Observe: a follower's Observe delivered a leadership change (the
	// election workload). Complete is when it was delivered; Invoke the
	// earliest the read behind it may have begun (Observe reads the
	// nodes before it delivers), so Invoke may precede the invoke of ops
	// with lower ids. Token is the delivered term, 0 for "no leader";
	// Text the term's value. A failed Observe is the end of the
	// deliveries.
	Observe Kind = "observe"
	// Proclaim: an election's leader set its term's value (Token the
	// term, Lease the term's acquire, Text the value): Ok when the
	// library said it was published, Fail when it said the value was
	// certainly not published (no read may ever return it), Unknown
	// otherwise.
	Proclaim Kind = "proclaim"
	// LeaderRead: a follower read the election's leader (Leader): Ok
	// with Token the term read (0: no leader) and Text its value; Fail
	// when it could not tell.
	LeaderRead Kind = "leader-read"
	// GuardWrite: a write through a fenced store outside the lock (the
	// project's guard), presenting Token: Ok when the guard accepted it,
	// Fail when it refused it (Last is then the token the guard had
	// accepted last).
	GuardWrite Kind = "guard-write"
)

func (k Kind) valid() bool {
	switch k {
	case Acquire, Extend, Read, Write, Release, NemesisStart, NemesisEnd, Signal, Observe, GuardWrite, Proclaim, LeaderRead:
		return true
	}
	return false
}

// Outcome is how an operation ended.
type Outcome string

// The outcomes. See the package documentation for their exact meaning.
const (
	Ok      Outcome = "ok"
	Fail    Outcome = "fail"
	Unknown Outcome = "unknown"
)

func (o Outcome) valid() bool { return o == Ok || o == Fail || o == Unknown }

// Op is one operation of a history. Times are durations since the run's
// start on the run's one clock.
type Op struct {
	ID     OpID `json:"id"`
	Worker int  `json:"worker"`
	Kind   Kind `json:"kind"`
	// Invoke is when the call started; Complete when it returned (0 if it
	// never did).
	Invoke   time.Duration `json:"invoke_ns"`
	Complete time.Duration `json:"complete_ns"`
	Outcome  Outcome       `json:"outcome"`
	// Lease is the Ok acquire this operation was made under (0 = not given).
	Lease OpID `json:"lease,omitempty"`
	// Token: acquire — the fencing token handed out; write — the token
	// presented. 0 means none.
	Token uint64 `json:"token,omitempty"`
	// ValidUntil: acquire and extend — the lease's validity deadline on the
	// test clock (0 = not reported).
	ValidUntil time.Duration `json:"valid_until_ns,omitempty"`
	// Value: read — the value read; write — the value written.
	Value int64 `json:"value,omitempty"`
	// Name: nemesis events — the fault's name.
	Name string `json:"name,omitempty"`
	// Error is the error text of a Fail or Unknown outcome, if any.
	Error string `json:"error,omitempty"`
	// Locks: acquire — the lock names the lease holds (nil: the run's one
	// lock). Two leases exclude each other only when their names meet.
	Locks []string `json:"locks,omitempty"`
	// Shared: acquire — a read (shared) hold, which may overlap other
	// shared holds of the same names but no exclusive one.
	Shared bool `json:"shared,omitempty"`
	// Role: acquire — what the worker asked for beyond the plain lock
	// ("writer" of a read-write lock, "fair" waiter, ...); free-form, for
	// the checks of one lock kind.
	Role string `json:"role,omitempty"`
	// Last: a refused guard write — the last token the guard had accepted
	// when it refused.
	Last uint64 `json:"last,omitempty"`
	// Text: an election's value — acquire: the campaign's value;
	// proclaim: the value proclaimed; leader-read and observe: the value
	// read.
	Text string `json:"text,omitempty"`
}

// Returned reports whether the call returned (Complete is meaningful).
func (o Op) Returned() bool { return o.Complete != 0 }

// Accepted reports whether o is a write the resource accepted.
func (o Op) Accepted() bool { return o.Kind == Write && o.Outcome == Ok }

// Rejected reports whether o is a write the resource rejected.
func (o Op) Rejected() bool { return o.Kind == Write && o.Outcome == Fail }

// Duration is Complete − Invoke, or 0 if the call never returned.
func (o Op) Duration() time.Duration {
	if !o.Returned() {
		return 0
	}
	return o.Complete - o.Invoke
}

func (o Op) String() string {
	s := fmt.Sprintf("#%d w%d %s %s [%v,%v]", o.ID, o.Worker, o.Kind, o.Outcome, o.Invoke, o.Complete)
	switch o.Kind {
	case Acquire, Extend:
		s += fmt.Sprintf(" token=%d valid_until=%v", o.Token, o.ValidUntil)
	case Read:
		s += fmt.Sprintf(" value=%d", o.Value)
	case Write:
		s += fmt.Sprintf(" value=%d token=%d", o.Value, o.Token)
	case GuardWrite:
		s += fmt.Sprintf(" value=%d token=%d", o.Value, o.Token)
		if o.Outcome == Fail {
			s += fmt.Sprintf(" last=%d", o.Last)
		}
	case NemesisStart, NemesisEnd:
		s += " " + o.Name
	case Proclaim, LeaderRead, Observe:
		s += fmt.Sprintf(" term=%d value=%q", o.Token, o.Text)
	}
	if o.Lease != 0 {
		s += fmt.Sprintf(" lease=#%d", o.Lease)
	}
	return s
}

// History is the record of one run.
type History struct {
	// Meta holds free-form labels (mode, scenario, seed, …).
	Meta map[string]string `json:"meta,omitempty"`
	// Ops are ordered by ID.
	Ops []Op `json:"ops"`
}

// Op returns the operation with the given id.
func (h History) Op(id OpID) (Op, bool) {
	// IDs are usually dense and sorted: try the direct index first.
	if i := int(id) - 1; i >= 0 && i < len(h.Ops) && h.Ops[i].ID == id {
		return h.Ops[i], true
	}
	for _, o := range h.Ops {
		if o.ID == id {
			return o, true
		}
	}
	return Op{}, false
}

// MetaRunEnd is the label holding when the run stopped starting new
// operations (its context ended), in nanoseconds on the history's clock;
// operations still under way then finish after it.
const MetaRunEnd = "run_end_ns"

// RunEnd is the instant the run stopped (MetaRunEnd), if recorded.
func (h History) RunEnd() (time.Duration, bool) {
	n, err := strconv.ParseInt(h.Meta[MetaRunEnd], 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(n), true
}

// End is the latest time stamped in the history (0 if empty).
func (h History) End() time.Duration {
	var end time.Duration
	for _, o := range h.Ops {
		end = max(end, o.Invoke, o.Complete)
	}
	return end
}

// Workers returns the distinct worker ids (without [Nemesis]), sorted.
func (h History) Workers() []int {
	var ws []int
	for _, o := range h.Ops {
		if o.Worker != Nemesis && !slices.Contains(ws, o.Worker) {
			ws = append(ws, o.Worker)
		}
	}
	slices.Sort(ws)
	return ws
}

// ErrInvalid is wrapped by every error [History.Validate] returns.
var ErrInvalid = errors.New("history: invalid")

// Validate checks the structural rules of a history: positive unique ids,
// known kinds and outcomes, non-negative times, Complete ≥ Invoke for
// returned calls, an Ok or Fail outcome only on returned calls, a name on
// nemesis events, Lease referring to an acquire of the same worker.
func (h History) Validate() error {
	seen := make(map[OpID]Op, len(h.Ops))
	var errs []error
	bad := func(o Op, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: op #%d: %s", ErrInvalid, o.ID, fmt.Sprintf(format, args...)))
	}
	for _, o := range h.Ops {
		if o.ID <= 0 {
			bad(o, "id must be ≥ 1")
		}
		if _, dup := seen[o.ID]; dup {
			bad(o, "duplicate id")
		}
		seen[o.ID] = o
		if !o.Kind.valid() {
			bad(o, "unknown kind %q", o.Kind)
		}
		if !o.Outcome.valid() {
			bad(o, "unknown outcome %q", o.Outcome)
		}
		if o.Invoke < 0 || o.Complete < 0 {
			bad(o, "negative time")
		}
		if o.Returned() && o.Complete < o.Invoke {
			bad(o, "completes (%v) before it is invoked (%v)", o.Complete, o.Invoke)
		}
		if !o.Returned() && o.Outcome != Unknown {
			bad(o, "outcome %s on a call that never returned (complete_ns 0); use unknown", o.Outcome)
		}
		if (o.Kind == NemesisStart || o.Kind == NemesisEnd) && o.Name == "" {
			bad(o, "nemesis event without a name")
		}
		if (o.Kind == NemesisStart || o.Kind == NemesisEnd) != (o.Worker == Nemesis) {
			bad(o, "nemesis events and only they use worker %d", Nemesis)
		}
	}
	for _, o := range h.Ops {
		if o.Lease == 0 {
			continue
		}
		a, ok := seen[o.Lease]
		switch {
		case !ok:
			bad(o, "lease #%d not in the history", o.Lease)
		case a.Kind != Acquire:
			bad(o, "lease #%d is a %s, not an acquire", o.Lease, a.Kind)
		case a.Worker != o.Worker:
			bad(o, "lease #%d belongs to worker %d", o.Lease, a.Worker)
		}
	}
	return errors.Join(errs...)
}
