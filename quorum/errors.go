package quorum

import (
	"context"
	"errors"

	"github.com/quorumlock/quorumlock/internal/oneline"
	"github.com/quorumlock/quorumlock/multilock"
)

// Error is how every lock kind (Mutex, RWMutex, FairMutex, MutexAll)
// reports a failed Lock, TryLock, Extend or Unlock: Error() is one line,
// summary first,
//
//	quorumlock: lock "orders/42" not obtained: held by another owner on 2 of 3 nodes, 1 not waited for
//
// errors.Is finds ErrNotObtained (or ErrNotHeld), ErrTaken when a node
// refused because another owner holds the lock, ErrClosed, ErrUnanswered
// and the caller's context error; errors.As finds the nodes' errors
// (*NodeError, the most telling first: a failure such as a refused
// connection, then a refusal by another owner, then a call cut off by its
// deadline). Nodes lists them all, and fmt's %+v prints one per line. A
// node that had not answered when the outcome was already known is no
// error: it is counted in Undecided.
type Error = multilock.Error

// named gives err, when it is an *Error, the lock's name, and returns it.
func (m *Mutex) named(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		e.Name = m.name()
	}
	return err
}

// notObtained is the error of an acquisition that could not start or
// finish for cause (ErrClosed, ...), with errs joined.
func (m *Mutex) notObtained(errs ...error) error {
	e := multilock.NewError(multilock.OpAcquire, ErrNotObtained, len(m.c.nodes), errs...)
	e.Name = m.name()
	return e
}

// withCtxErr is err with ctx's error joined when ctx has ended and err
// does not already wrap it.
func withCtxErr(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if cerr == nil || errors.Is(err, cerr) {
		return err
	}
	var e *Error
	if errors.As(err, &e) && err == error(e) {
		return e.WithCause(cerr)
	}
	return oneline.Join(err, cerr)
}

// mlExtend and mlRelease are the lease's multilock calls with the lock's
// name in their errors.
func (l *Lease) mlExtend(ctx context.Context) (bool, error) {
	ok, err := l.ml.Extend(ctx, l.ttl)
	return ok, l.m.named(err)
}

func (l *Lease) mlRelease(ctx context.Context) (bool, error) {
	ok, err := l.ml.Release(ctx)
	return ok, l.m.named(err)
}
