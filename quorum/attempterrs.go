package quorum

import (
	"context"
	"errors"
	"net"

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

// rank orders a node's errors by how much they tell: a cut-off call (no
// answer, a deadline) says least; "held by another owner" more; any other
// failure (connection refused, a permission, a WAIT or restart gate) most.
func rank(err error) int {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return 0
	case errors.Is(err, multilock.ErrNoAnswer), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return 0
	case errors.Is(err, multilock.ErrRefused):
		return 1
	}
	return 2
}

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

// final is the error of a Lock that gave up: ErrNotObtained, the best
// error per node, and ctx's error. Without recorded node errors it is last
// (with ctx's error).
func (a *attemptErrs) final(ctx context.Context, last error) error {
	if len(a.order) == 0 {
		return withCtxErr(ctx, last)
	}
	errs := []error{ErrNotObtained}
	if errors.Is(last, ErrClosed) {
		errs = append(errs, ErrClosed)
	}
	for _, n := range a.order {
		errs = append(errs, a.best[n])
	}
	if cerr := ctx.Err(); cerr != nil {
		errs = append(errs, cerr)
	}
	return errors.Join(errs...)
}
