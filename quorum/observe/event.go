package observe

import (
	"context"
	"time"
)

// Op names the lock operation an Event reports; its value is the name
// logs and metrics use.
type Op string

const (
	// OpAttempt: one acquisition attempt on the nodes was decided. TryLock
	// makes one; Lock makes one per try while it waits. Votes and Contended
	// are set.
	OpAttempt Op = "attempt"
	// OpAcquire: Lock or TryLock returned, with a lease or an error.
	// Duration is the whole wait, Token the lease's fencing token.
	OpAcquire Op = "acquire"
	// OpExtend: a renewal of a held lease, by the watchdog (Watchdog true)
	// or by Lease.Extend.
	OpExtend Op = "extend"
	// OpRelease: Unlock gave the lease back. Held is how long the caller
	// held it; Err is what Unlock returned (it wraps quorum.ErrLeaseLost or
	// quorum.ErrLeaseExpired when the lease had ended before).
	OpRelease Op = "release"
	// OpLost: a lease ended without Unlock: its watchdog could not renew it
	// (Err wraps quorum.ErrLeaseLost) or its fixed lease time ran out
	// (quorum.ErrLeaseExpired). Held is how long it had been held. It is
	// observed just after the lease's Done channel closes: the holder is
	// told first.
	OpLost Op = "lost"
)

// Outcome labels, short and of low cardinality, for metrics and logs.
const (
	OutcomeOK        = "ok"        // the operation succeeded
	OutcomeContended = "contended" // another owner holds the lock (a node refused)
	OutcomeCancelled = "cancelled" // the caller's context ended first
	OutcomeFailed    = "failed"    // nodes failed or did not answer in time
	OutcomeLost      = "lost"      // the lease is no longer held on a quorum
	OutcomeExpired   = "expired"   // a fixed lease time ran out
)

// Event is the outcome of one lock operation, as an Observer sees it. Which
// fields are set depends on Op.
type Event struct {
	Op Op
	// Name is the lock's name (names joined by "," for a MutexAll).
	Name string
	// Outcome is one of the Outcome… labels.
	Outcome string
	// Start is when the operation began (for OpLost: when the loss was
	// noticed); Duration is how long it took (0 for OpLost).
	Start    time.Time
	Duration time.Duration
	// Err is nil on success, else the operation's error (OpLost: why the
	// lease ended).
	Err error
	// Contended (OpAttempt): at least one node refused because another
	// owner holds the lock.
	Contended bool
	// Votes (OpAttempt): each node's answer, as far as known at the
	// decision (for a MutexAll of several names, one entry per name).
	Votes []Vote
	// Held (OpRelease, OpLost): time since the lease was obtained.
	Held time.Duration
	// Token is the lease's fencing token (0 with quorum.WithFencing(false),
	// or when no lease was obtained).
	Token int64
	// Watchdog (OpExtend): the renewal was the watchdog's.
	Watchdog bool
}

// Observer is told the outcome of every lock operation of a client: each
// acquisition attempt with its per-node votes, each Lock or TryLock with its
// wait, each renewal, release and lost lease. Package otelquorum turns these
// into OpenTelemetry metrics and spans; quorum.WithLogger logs them with
// log/slog.
//
// Observe is called synchronously, after the outcome is known, on the
// goroutine that did the operation (for watchdog renewals and lost leases a
// timer's goroutine, with context.Background). It must be safe for
// concurrent use, must not block, and must not keep e.Votes after it
// returns without copying. ctx is the caller's context where there is one
// (Lock, TryLock, Extend, Unlock), so a tracer can attach spans to it.
type Observer interface {
	Observe(ctx context.Context, e Event)
}
