package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/quorumlock/quorumlock/internal/ctxend"
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
type Error struct {
	// Op is what failed: "acquire", "extend", "release", "fence" or
	// "dial".
	Op string
	// Name is the lock's name.
	Name string
	// Total is the number of nodes asked; Granted how many of them agreed;
	// Undecided how many had not answered when the outcome was decided.
	Total, Granted, Undecided int

	core  *multilock.Error // what the core reported, with the nodes' answers
	nodes *nodeViews       // quorum's *NodeError for each of the core's
}

// NodeError is the error of one node: its name (host:port) and what it
// answered.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return e.Node + ": " + oneline.Bare(e.Err) }

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }

// quorum's errors are its own types, made from the core's (package
// multilock) where they leave it, rather than aliases of them: go doc
// shows their fields and methods, and users handle one package's types.
// The core keeps the tally and the text; quorum's Error is a view of it.

// nodeViews gives each of the core's node errors one *NodeError, shared by
// an Error and the errors nested in it, so that Nodes and errors.As hand
// out the same values.
type nodeViews struct {
	mu sync.Mutex
	m  map[*multilock.NodeError]*NodeError
}

func (v *nodeViews) of(ne *multilock.NodeError) *NodeError {
	v.mu.Lock()
	defer v.mu.Unlock()
	if q, ok := v.m[ne]; ok {
		return q
	}
	if v.m == nil {
		v.m = map[*multilock.NodeError]*NodeError{}
	}
	q := &NodeError{Node: ne.Node, Err: ne.Err}
	v.m[ne] = q
	return q
}

// fromCore is err as quorum's *Error when it is the core's *Error, else
// err.
func fromCore(err error) error {
	if me, ok := err.(*multilock.Error); ok {
		return wrapCore(me, &nodeViews{})
	}
	return err
}

func wrapCore(me *multilock.Error, v *nodeViews) *Error {
	return &Error{Op: me.Op, Name: me.Name, Total: me.Total, Granted: me.Granted, Undecided: me.Undecided, core: me, nodes: v}
}

// toCore is err in the core's types, for the core to sort and count.
func toCore(err error) error {
	switch e := err.(type) {
	case *Error:
		return e.view()
	case *NodeError:
		return &multilock.NodeError{Node: e.Node, Err: e.Err}
	}
	return err
}

// newError is multilock.NewError for quorum's errors.
func newError(op string, kind error, total int, errs ...error) *Error {
	cs := make([]error, len(errs))
	for i, err := range errs {
		cs[i] = toCore(err)
	}
	return wrapCore(multilock.NewError(op, kind, total, cs...), &nodeViews{})
}

// view is the core's error with e's fields.
func (e *Error) view() *multilock.Error {
	c := *e.core
	c.Op, c.Name, c.Total, c.Granted, c.Undecided = e.Op, e.Name, e.Total, e.Granted, e.Undecided
	return &c
}

// withCause adds err as a cause (or a node's error, or the context's),
// and returns e.
func (e *Error) withCause(err error) *Error {
	c := e.view()
	c.WithCause(toCore(err))
	e.core = c
	return e
}

func (e *Error) Error() string { return e.view().Error() }

// Format prints Error() for %v and %s; %+v adds one line per node error.
func (e *Error) Format(f fmt.State, verb rune) { e.view().Format(f, verb) }

// Nodes returns the nodes' errors, most telling first. For a lock over
// several names (MutexAll), those of every name's nodes.
func (e *Error) Nodes() []*NodeError {
	cn := e.core.Nodes()
	out := make([]*NodeError, len(cn))
	for i, ne := range cn {
		out[i] = e.nodes.of(ne)
	}
	return out
}

// Unwrap returns the sentinel (ErrNotObtained, ...), the other causes,
// the nodes' errors (for a lock over several names, one *Error per name)
// and the caller's context error, in that order.
func (e *Error) Unwrap() []error {
	out := e.core.Unwrap()
	for i, x := range out {
		switch x := x.(type) {
		case *multilock.NodeError:
			out[i] = e.nodes.of(x)
		case *multilock.Error:
			out[i] = wrapCore(x, e.nodes)
		}
	}
	return out
}

// named gives err, when it is an *Error, the lock's name, and returns it.
func (m *Mutex) named(err error) error {
	if err == nil {
		return nil
	}
	err = fromCore(err)
	var e *Error
	if errors.As(err, &e) {
		e.Name = m.name()
	}
	return err
}

// notObtained is the error of an acquisition that could not start or
// finish for cause (ErrClosed, ...), with errs joined.
func (m *Mutex) notObtained(errs ...error) error {
	e := newError(multilock.OpAcquire, ErrNotObtained, len(m.c.nodes), errs...)
	e.Name = m.name()
	return e
}

// withCtxErr is err with ctx's error joined when ctx has ended and err
// does not already wrap it.
func withCtxErr(ctx context.Context, err error) error {
	// A deadline that has come counts before ctx's timer cancels it: a
	// waiter that gave up at it says so (see ctxend).
	cerr := ctxend.Err(ctx)
	if cerr == nil || errors.Is(err, cerr) {
		return err
	}
	var e *Error
	if errors.As(err, &e) && err == error(e) {
		return e.withCause(cerr)
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
