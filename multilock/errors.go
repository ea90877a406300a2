package multilock

import (
	"errors"
)

// Errors. Failures are reported as one of these joined with a *NodeError per
// sub-lock that refused or failed, so errors.Is and errors.As both work.
var (
	// ErrNotObtained: the policy's quorum was not granted.
	ErrNotObtained = errors.New("quorumlock: lock not obtained")
	// ErrRefused: a sub-lock is held by another owner.
	ErrRefused = errors.New("held by another owner")
	// ErrTooSlow: the quorum was granted, but the acquisition took so long
	// that no validity was left (ttl − elapsed − drift ≤ 0).
	ErrTooSlow = errors.New("acquisition outlasted the ttl minus the drift allowance; use a longer ttl or a shorter per-node budget")
	// ErrNotHeld: an extend or release did not find the lock held by us on
	// enough sub-locks.
	ErrNotHeld = errors.New("quorumlock: lock not held on a quorum")
	// ErrLost: more sub-locks than the policy allows answered that this
	// acquisition no longer holds them; no extend can succeed any more.
	ErrLost = errors.New("quorumlock: lock no longer held on a quorum")
	// ErrExpired: the lease's validity ended before the operation completed.
	ErrExpired = errors.New("quorumlock: lease validity ended")
	// ErrNoAnswer: a sub-lock had not answered when the outcome was decided
	// (or the caller's context ended).
	ErrNoAnswer = errors.New("no answer before the decision")
	// ErrFenceNotWritten: the fencing token could not be written back to a
	// quorum, so it cannot be handed out.
	ErrFenceNotWritten = errors.New("fencing token not written back to a quorum")
)

// NodeError is the error of one sub-lock.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return e.Node + ": " + e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }
