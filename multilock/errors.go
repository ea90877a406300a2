package multilock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/quorumlock/quorumlock/internal/oneline"
)

// Errors. A failed Acquire, Extend or Release returns an *Error: one line
// that sums up what the sub-locks answered, with a *NodeError per sub-lock
// that refused or failed behind it, so errors.Is and errors.As both work.
var (
	// ErrNotObtained: the policy's quorum was not granted.
	ErrNotObtained = errors.New("quorumlock: lock not obtained")
	// ErrTaken: a sub-lock is held by another owner.
	ErrTaken = errors.New("held by another owner")
	// ErrTooSlow: the quorum was granted, but the acquisition took so long
	// that no validity was left (ttl − elapsed − drift ≤ 0).
	ErrTooSlow = errors.New("quorumlock: acquisition outlasted the ttl minus the drift allowance; use a longer ttl or a shorter per-node budget")
	// ErrNotHeld: an extend or release did not find the lock held by us on
	// enough sub-locks.
	ErrNotHeld = errors.New("quorumlock: lock not held on a quorum")
	// ErrLost: more sub-locks than the policy allows answered that this
	// acquisition no longer holds them; no extend can succeed any more.
	ErrLost = errors.New("quorumlock: lock no longer held on a quorum")
	// ErrExpired: the lease's validity ended before the operation completed.
	ErrExpired = errors.New("quorumlock: lease validity ended")
	// ErrNoAnswer: a sub-lock had not answered when the caller's context
	// ended, before the outcome was decided.
	ErrNoAnswer = errors.New("no answer before the deadline")
	// ErrFenceNotWritten: the fencing token could not be written back to a
	// quorum, so it cannot be handed out.
	ErrFenceNotWritten = errors.New("quorumlock: fencing token not written back to a quorum")
)

// errNotHeldHere is a sub-lock's refusal of an extend or release: it does
// not hold this acquisition's share. errors.Is finds ErrNotHeld in it.
var errNotHeldHere error = notHeldHere{}

type notHeldHere struct{}

func (notHeldHere) Error() string        { return "not held by this acquisition" }
func (notHeldHere) Is(target error) bool { return target == ErrNotHeld }

// NodeError is the error of one sub-lock.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return e.Node + ": " + bare(e.Err) }
func (e *NodeError) Unwrap() error { return e.Err }

// Operations an Error reports on. Another op names its summary after
// the kind (the caller's sentinel).
const (
	OpAcquire = "acquire"
	OpExtend  = "extend"
	OpRelease = "release"
	OpFence   = "fence"
)

// Error is a failed acquisition, extension, release or fencing write-back
// over a set of sub-locks. Error() is one line, summary first, e.g.
//
//	quorumlock: lock "orders/42" not obtained: held by another owner on 2 of 3 nodes, 1 not waited for
//
// The per-sub-lock errors stay reachable: Nodes, errors.As with a
// *NodeError (the most telling one comes first: a failure such as a
// refused connection, then a refusal by another owner, then a call cut off
// by its deadline), Unwrap, and fmt's %+v, which prints one per line.
// Sub-locks that had not answered when the outcome was already decided are
// not errors: they are counted in Undecided.
type Error struct {
	// Op is what failed: OpAcquire, OpExtend, OpRelease or OpFence.
	Op string
	// Name is the lock's name ("" when the caller did not set it).
	Name string
	// Total is the number of sub-locks asked; Granted how many of them
	// agreed; Undecided how many had not answered when the outcome was
	// decided (healthy or not: they were not waited for).
	Total, Granted, Undecided int

	kind   error        // ErrNotObtained, ErrNotHeld, ErrFenceNotWritten
	causes []error      // reasons besides the sub-locks' answers (ErrTooSlow, a closed client...)
	nodes  []*NodeError // most telling first
	ctx    error        // the caller's context error, when it ended first
}

// NewError builds an Error for op (kind is the sentinel errors.Is finds:
// ErrNotObtained, ErrNotHeld, ...) over total sub-locks from errs: each
// *NodeError is a sub-lock's error, a context error is the caller's, an
// *Error of the same op is taken over (its sub-lock errors and causes),
// and anything else is a cause.
// nil errors are skipped.
func NewError(op string, kind error, total int, errs ...error) *Error {
	e := &Error{Op: op, kind: kind, Total: total}
	e.add(errs...)
	return e
}

func (e *Error) add(errs ...error) {
	for _, err := range errs {
		var ne *NodeError
		var me *Error
		switch {
		case err == nil:
		case errors.As(err, &ne) && err == error(ne):
			e.nodes = append(e.nodes, ne)
		case errors.As(err, &me) && err == error(me) && me.Op == e.Op:
			// Another report of the same operation: its answers join ours.
			e.nodes = append(e.nodes, me.nodes...)
			e.causes = append(e.causes, me.causes...)
			if e.ctx == nil {
				e.ctx = me.ctx
			}
		case err == context.Canceled || err == context.DeadlineExceeded:
			e.ctx = err
		case err == e.kind:
			// Already said by the summary.
		default:
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				e.add(j.Unwrap()...)
				continue
			}
			e.causes = append(e.causes, err)
		}
	}
	slices.SortStableFunc(e.nodes, func(a, b *NodeError) int { return Rank(b.Err) - Rank(a.Err) })
}

// WithCause returns e with err added as a cause (or a sub-lock's error, or
// the context's, as NewError sorts them).
func (e *Error) WithCause(err error) *Error {
	e.add(err)
	return e
}

// SitsOut reports whether err is a sub-lock that answered but does not
// vote for now (a safety gate such as restart detection): its error has a
// method SitsOut() bool that returns true. A tally counts such sub-locks
// as sitting out, neither as failed nor as silent.
func SitsOut(err error) bool {
	var s interface{ SitsOut() bool }
	return errors.As(err, &s) && s.SitsOut()
}

// Rank orders a sub-lock's errors by how much they tell: a call cut off by
// its deadline says least (0); "held by another owner" more (1); any other
// failure (connection refused, a permission, a safety gate) most (2).
func Rank(err error) int {
	var ne net.Error
	var me *Error
	switch {
	case errors.As(err, &me):
		if len(me.nodes) > 0 {
			return Rank(me.nodes[0].Err)
		}
		return 2
	case errors.As(err, &ne) && ne.Timeout():
		return 0
	case errors.Is(err, ErrNoAnswer), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return 0
	case errors.Is(err, ErrTaken), errors.Is(err, ErrNotHeld):
		return 1
	}
	return 2
}

// Nodes returns the per-sub-lock errors, most telling first. Sub-locks
// that are themselves MultiLocks (a lock over several names) are replaced
// by their own sub-locks' errors.
func (e *Error) Nodes() []*NodeError {
	var out []*NodeError
	for _, ne := range e.nodes {
		var me *Error
		if errors.As(ne.Err, &me) {
			out = append(out, me.Nodes()...)
			continue
		}
		out = append(out, ne)
	}
	return out
}

// Unwrap returns the kind (ErrNotObtained, ...), the causes, the
// sub-locks' errors and the context's error, in that order.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, 2+len(e.causes)+len(e.nodes))
	if e.kind != nil {
		out = append(out, e.kind)
	}
	out = append(out, e.causes...)
	for _, ne := range e.nodes {
		var me *Error
		if errors.As(ne.Err, &me) {
			out = append(out, me) // a nested lock: its own nodes come first through it
			continue
		}
		out = append(out, ne)
	}
	if e.ctx != nil {
		out = append(out, e.ctx)
	}
	return out
}

func (e *Error) Error() string {
	return oneline.Prefix + e.text()
}

// Format prints Error() for %v and %s; %+v adds one line per sub-lock error.
func (e *Error) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('+'):
		_, _ = fmt.Fprint(f, e.Error())
		for _, ne := range e.Nodes() {
			_, _ = fmt.Fprintf(f, "\n\t%s: %s", ne.Node, bare(ne.Err))
		}
	case verb == 'q':
		_, _ = fmt.Fprintf(f, "%q", e.Error())
	default:
		_, _ = fmt.Fprint(f, e.Error())
	}
}

// head is the summary's subject and verb, without the prefix.
func (e *Error) head() string {
	subject := "lock"
	if e.Name != "" {
		subject = "lock " + strconv.Quote(e.Name)
	}
	switch e.Op {
	case OpFence:
		return "fencing token not written back to a quorum"
	case OpExtend:
		return subject + " not extended"
	case OpRelease:
		return subject + " not released on a quorum"
	case OpAcquire, "":
		return subject + " not obtained"
	}
	if e.kind != nil {
		return bare(e.kind)
	}
	return e.Op + " failed"
}

// body is what the sub-locks answered, the causes first and the caller's
// context last, on one line and without the prefix.
func (e *Error) body() string {
	var parts []string
	tally := e.tally()
	for _, c := range e.causes {
		if c == ErrLost && strings.Contains(tally, "no longer held on ") {
			continue // the tally says it, with numbers
		}
		parts = append(parts, bare(c))
	}
	if tally != "" {
		parts = append(parts, tally)
	}
	if e.ctx != nil {
		parts = append(parts, e.ctx.Error())
	}
	return strings.Join(parts, "; ")
}

// maxQuoted is how many failed sub-locks a summary quotes.
const maxQuoted = 3

// tally counts the sub-locks by answer: "held by another owner on 2 of 3
// nodes, 1 not waited for". Failures other than a refusal or a timeout,
// and sub-locks sitting out, are quoted, up to maxQuoted of each: which
// node, and why. A sub-lock the decision did not wait for is counted as
// such, not as silent: it may well have answered a moment later.
func (e *Error) tally() string {
	var refused, gone, slow, failed, sitting int
	var quoted, resting []string // the failures and the sub-locks sitting out, most telling first: which nodes, and why
	var nested []string
	for _, ne := range e.nodes {
		var me *Error
		if errors.As(ne.Err, &me) {
			nested = append(nested, ne.Node+": "+me.body())
			continue
		}
		switch {
		case errors.Is(ne.Err, ErrNotHeld):
			gone++
		case SitsOut(ne.Err):
			sitting++
			if len(resting) < maxQuoted {
				resting = append(resting, ne.Node+": "+bare(ne.Err))
			}
		case Rank(ne.Err) == 0:
			slow++
		case Rank(ne.Err) == 1:
			refused++
		default:
			failed++
			if len(quoted) < maxQuoted {
				quoted = append(quoted, ne.Node+": "+bare(ne.Err))
			}
		}
	}
	if len(nested) > 0 {
		return strings.Join(nested, "; ")
	}
	var parts []string
	// of is "k of n nodes" in the first part, "k" after it.
	of := func(k int) string {
		if len(parts) > 0 || e.Total == 0 {
			return strconv.Itoa(k)
		}
		return fmt.Sprintf("%d of %d nodes", k, e.Total)
	}
	if refused > 0 {
		parts = append(parts, "held by another owner on "+of(refused))
	}
	if gone > 0 {
		parts = append(parts, "no longer held on "+of(gone))
	}
	if failed > 0 {
		if failed > maxQuoted {
			quoted = append(quoted, fmt.Sprintf("and %d more", failed-maxQuoted))
		}
		parts = append(parts, fmt.Sprintf("%s failed (%s)", of(failed), strings.Join(quoted, "; ")))
	}
	if sitting > 0 {
		if sitting > maxQuoted {
			resting = append(resting, fmt.Sprintf("and %d more", sitting-maxQuoted))
		}
		parts = append(parts, fmt.Sprintf("%s sitting out (%s)", of(sitting), strings.Join(resting, "; ")))
	}
	if slow > 0 {
		parts = append(parts, of(slow)+" timed out")
	}
	if e.Undecided > 0 {
		parts = append(parts, of(e.Undecided)+" not waited for")
	}
	if e.Granted > 0 && len(parts) > 0 {
		verb := map[string]string{OpAcquire: "granted", OpExtend: "extended", OpRelease: "released", OpFence: "written"}[e.Op]
		if verb == "" {
			verb = "answered"
		}
		parts = append(parts, verb+" on "+of(e.Granted))
	}
	return strings.Join(parts, ", ")
}

// bare is err's text on one line without the "quorumlock: " prefix.
func bare(err error) string { return oneline.Bare(err) }

// text is Error() without the prefix.
func (e *Error) text() string {
	if b := e.body(); b != "" {
		return e.head() + ": " + b
	}
	return e.head()
}
