package quorum

import (
	"context"
	"errors"

	"github.com/quorumlock/quorumlock/multilock"
)

// attemptErrs keeps, per node, the most informative error a waiting Lock
// saw across its attempts, so that a Lock that gives up reports
// "connection refused" or "NOPERM" rather than only the deadline its last
// attempt ran into. Not safe for concurrent use (Lock's loop owns it).
type attemptErrs struct {
	order []string
	best  map[string]*NodeError
}

// rank orders a node's errors by how much they tell (multilock.Rank): a
// cut-off call (no answer, a deadline) says least; "held by another
// owner" more; any other failure (connection refused, a permission, a
// WAIT or restart gate) most.
func rank(err error) int { return multilock.Rank(err) }

// add records the per-node errors of a failed attempt; at equal rank the
// later error wins.
func (a *attemptErrs) add(err error) {
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		ne, ok := err.(*NodeError)
		if !ok {
			return
		}
		if a.best == nil {
			a.best = map[string]*NodeError{}
		}
		old, seen := a.best[ne.Node]
		if !seen {
			a.order = append(a.order, ne.Node)
		}
		if !seen || rank(ne.Err) >= rank(old.Err) {
			a.best[ne.Node] = ne
		}
	}
	walk(err)
}

// final is the error of a Lock that gave up: an *Error wrapping
// ErrNotObtained with the best error per node, the last attempt's other
// causes (ErrClosed, ...), and ctx's error. Without recorded node errors
// it is last (with ctx's error).
func (a *attemptErrs) final(ctx context.Context, last error) error {
	if len(a.order) == 0 {
		return withCtxErr(ctx, last)
	}
	e := newError(multilock.OpAcquire, ErrNotObtained, 0)
	var le *Error
	if errors.As(last, &le) {
		e.Name, e.Total = le.Name, le.Total
		for _, x := range le.Unwrap() {
			var ne *NodeError
			var me *Error
			if x == ErrNotObtained || x == ErrUnanswered || errors.As(x, &ne) || errors.As(x, &me) {
				continue // the sentinel, or a node's answer: from a.best
			}
			e.withCause(x)
		}
	} else if errors.Is(last, ErrClosed) {
		e.withCause(ErrClosed)
	}
	for _, n := range a.order {
		e.withCause(a.best[n])
	}
	if le != nil && le.Total > 0 {
		// The nodes without an error granted or were undecided last time.
		e.Granted = le.Granted
		e.Undecided = max(0, le.Total-len(a.order)-le.Granted)
	}
	return markUnanswered(withCtxErr(ctx, e))
}
