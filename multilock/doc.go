// Package multilock is the quorum core of the lock, for locks on something
// other than Redis as well: it acquires a set of sub-locks (anything that
// implements Locker) in parallel and decides, with a Policy, whether the
// set is held. It knows nothing of Redis. Package quorum builds its Redis
// locks on it (package node implements Locker for one Redis node); most
// programs import quorum instead. A MultiLock is itself a Locker, so
// MultiLocks nest.
//
// One MultiLock is one acquisition attempt: Acquire once, then Extend and
// Release. Acquire calls every sub-lock at once, each with a deadline from
// Policy.LockWaitTime, and decides as soon as the outcome is known: held
// once n − FailedLocksLimit(n) granted, failed once more than
// FailedLocksLimit(n) refused or failed. Stragglers finish in the
// background (counted by WithTracker) and are given back if the attempt
// failed.
//
// Presets: All (every sub-lock; Redisson's MultiLock) and Majority (n/2+1;
// RedLock). A Policy is two functions, so users can write their own.
//
// The validity of a held set is counted on the client's monotonic clock
// from the end of the acquisition (see package drift):
//
//	validity = ttl − elapsed − (ttl·factor + 2 ms)
//
// If none is left the attempt failed. On failure every sub-lock, answered
// or not, is released on a fresh, short-deadline context. Extend re-arms
// only the sub-locks this attempt holds and succeeds only if the policy's
// quorum extends within the current validity; it never re-acquires.
//
// With WithFencing, Acquire takes a fencing token: the highest counter the
// granting sub-locks report, written back set-if-greater on a quorum of
// them (Fencer) before the attempt counts, so any later quorum sees it and
// tokens strictly increase across holders.
//
// Sub-locks may have optional abilities, found by type assertion:
// Rollbacker, Fencer, FenceKeeper and DeadlineBound.
//
// Failures are *Error values (one line, summary first) for which
// errors.Is finds ErrNotObtained, ErrNotHeld, ErrLost or ErrExpired, with
// one *NodeError per sub-lock that refused, failed or did not answer.
package multilock
