// Package multilock is the quorum core of the lock, for locks on something
// other than Redis: it acquires a set of sub-locks (anything that
// implements Locker) in parallel and decides with a Policy whether the set
// is held. Package quorum builds its Redis locks on it; most programs
// import quorum instead.
//
// One MultiLock is one acquisition attempt: Acquire once, then Extend and
// Release. Acquire calls every sub-lock at once and decides as soon as the
// outcome is known: held once n − FailedLocksLimit(n) granted, failed once
// more than FailedLocksLimit(n) refused or failed. Presets: All (every
// sub-lock) and Majority (n/2+1, RedLock). The validity of a held set is
// counted on the client's monotonic clock (see package drift):
//
//	validity = ttl − elapsed − (ttl·factor + 2 ms)
//
// On failure every sub-lock, answered or not, is released on a fresh,
// short-deadline context. Extend succeeds only if the policy's quorum
// extends within the current validity; it never re-acquires. With
// WithFencing, sub-locks that implement Fencer yield a fencing token that
// strictly increases across holders. A MultiLock is itself a Locker, so
// MultiLocks nest.
//
// Failures are *Error values (one line, summary first) for which
// errors.Is finds ErrNotObtained, ErrNotHeld, ErrLost or ErrExpired, with
// one *NodeError per sub-lock that refused, failed or did not answer.
package multilock

import (
	"time"

	"github.com/quorumlock/quorumlock/drift"
	"github.com/quorumlock/quorumlock/internal/multilock"
)

// MultiLock is one acquisition over a set of sub-locks: call Acquire once,
// then Extend and Release. It is safe for concurrent use and must not be
// copied.
type MultiLock = multilock.MultiLock

// New returns a MultiLock over lockers. It fails for no lockers, a nil
// locker, a policy whose limit is outside [0, n−1], or a bad drift factor.
func New(lockers []Locker, opts ...Option) (*MultiLock, error) {
	return multilock.New(lockers, opts...)
}

// Locker is one sub-lock of one acquisition attempt. Acquire tries once:
// granted is true when the sub-lock is now held by this attempt; on
// refusal (granted false, err nil) remaining is how long the holder's
// claim lasts (0 when unknown); fence is the fencing counter reported
// with a grant (0 when none is kept); an error means the outcome is
// unknown. Extend re-arms the TTL only where this attempt still holds the
// sub-lock; Release gives up what it holds. Implementations must be safe
// for concurrent use and return promptly when ctx is done.
type Locker = multilock.Locker

// Fencer is the optional ability of a Locker to take a fencing token
// (WithFencing): store it set-if-greater where this attempt's grant
// still stands.
type Fencer = multilock.Fencer

// Policy decides how many of n sub-locks may fail (FailedLocksLimit) and
// how long each sub-lock call may take (LockWaitTime).
type Policy = multilock.Policy

// Presets of Policy.
var (
	// All needs every sub-lock (Redisson's MultiLock).
	All = multilock.All
	// Majority needs n/2+1 sub-locks (RedLock).
	Majority = multilock.Majority
)

// Error is a failed acquisition, extension, release or fencing write-back
// over a set of sub-locks: one line, summary first; Nodes, errors.As with
// a *NodeError, Unwrap and %+v reach the per-sub-lock errors.
type Error = multilock.Error

// NodeError is the error of one sub-lock.
type NodeError = multilock.NodeError

// Outcome records what one sub-lock answered (MultiLock.Outcomes).
type Outcome = multilock.Outcome

// Operations an Error reports on (Error.Op).
const (
	OpAcquire = multilock.OpAcquire
	OpExtend  = multilock.OpExtend
	OpRelease = multilock.OpRelease
	OpFence   = multilock.OpFence
)

// Errors, found with errors.Is.
var (
	// ErrNotObtained: the policy's quorum was not granted.
	ErrNotObtained = multilock.ErrNotObtained
	// ErrRefused: a sub-lock is held by another owner.
	ErrRefused = multilock.ErrRefused
	// ErrTooSlow: the quorum was granted but no validity was left.
	ErrTooSlow = multilock.ErrTooSlow
	// ErrNotHeld: an extend or release did not find the lock held on
	// enough sub-locks.
	ErrNotHeld = multilock.ErrNotHeld
	// ErrLost: more sub-locks than the policy allows no longer hold this
	// acquisition; no extend can succeed any more.
	ErrLost = multilock.ErrLost
	// ErrExpired: the validity ended before the operation completed.
	ErrExpired = multilock.ErrExpired
	// ErrNoAnswer: a sub-lock had not answered when the caller's context
	// ended, before the outcome was decided.
	ErrNoAnswer = multilock.ErrNoAnswer
	// ErrFenceNotWritten: the fencing token could not be written back to a
	// quorum, so it cannot be handed out.
	ErrFenceNotWritten = multilock.ErrFenceNotWritten
)

// Option configures a MultiLock.
type Option = multilock.Option

// WithPolicy sets the policy; default Majority.
func WithPolicy(p Policy) Option { return multilock.WithPolicy(p) }

// WithFencing makes Acquire take a fencing token; sub-locks must implement
// Fencer. Default off.
func WithFencing(on bool) Option { return multilock.WithFencing(on) }

// WithClock sets the monotonic clock; default drift.System.
func WithClock(clk drift.Clock) Option { return multilock.WithClock(clk) }

// WithDriftFactor sets the clock drift factor; default drift.DefaultFactor
// (0.01).
func WithDriftFactor(f float64) Option { return multilock.WithDriftFactor(f) }

// WithReleaseTimeout bounds each sub-lock's release and clean-up call,
// run on a fresh context so a cancelled caller still cleans up. Default
// 250 ms.
func WithReleaseTimeout(d time.Duration) Option { return multilock.WithReleaseTimeout(d) }
