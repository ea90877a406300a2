// Package otelquorum reports the lock operations of a quorumlock client as
// OpenTelemetry metrics and spans. It lives in its own package so that
// programs that do not use OpenTelemetry never import it.
//
// Install it as the client's observer:
//
//	obs, err := otelquorum.New() // global MeterProvider and TracerProvider
//	client, err := quorum.New(nodes, quorum.WithObserver(obs))
//
// # Metrics
//
//	quorumlock.acquire.attempts  counter    attempts on the nodes, by outcome (ok, contended, failed)
//	quorumlock.acquire.duration  histogram  seconds a Lock or TryLock took, waiting included, by outcome
//	                                        (ok, contended, cancelled, failed)
//	quorumlock.hold.duration     histogram  seconds from obtaining a lease to Unlock, by outcome
//	                                        (ok, lost, expired, failed)
//	quorumlock.lease.renewals    counter    renewals, by outcome (ok, failed, lost) and watchdog (true, false)
//	quorumlock.lease.lost        counter    leases that ended without Unlock, by outcome (lost, expired)
//	quorumlock.leases.held       updown     leases handed out and not yet unlocked
//	quorumlock.node.votes        counter    per-node answers to attempts, by node and vote
//	                                        (granted, refused, error, no_answer)
//	quorumlock.node.rtt          histogram  seconds per node answer, by node
//
// Attribute keys are quorumlock.outcome, quorumlock.watchdog,
// quorumlock.node, quorumlock.vote and, only with WithLockNames,
// quorumlock.lock. Lock names are left out of metrics by default: a service
// that locks one name per customer or per order would otherwise create a
// time series per name. Spans always carry the name.
//
// # Spans
//
// Spans are made when an operation's outcome is known, with its real start
// and end times, as children of the caller's span (the context passed to
// Lock, TryLock, Extend or Unlock):
//
//	quorumlock.acquire  one Lock or TryLock, waiting included
//	quorumlock.attempt  one attempt on the nodes, with a "vote" event per node
//	quorumlock.hold     from obtaining the lease to Unlock (made at Unlock)
//	quorumlock.extend   an explicit Lease.Extend, and watchdog renewals that failed
//	quorumlock.lost     a lease that ended without Unlock (no parent: the
//	                    watchdog noticed it in the background)
//
// Failures set the span status to Error: attempts and acquisitions that
// failed on the nodes (not those refused because the lock is held, nor
// cancelled waits), renewals that failed, releases and holds of leases that
// were lost.
package otelquorum
