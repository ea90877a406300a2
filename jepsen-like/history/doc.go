// Package history records what the clients of a lock workload did and saw,
// so that the checker can decide afterwards whether the lock kept its
// promises.
//
// # Model
//
// A run has one monotonic [Clock], owned by the test, that every timestamp
// comes from: the workers' acquire and release calls, the shared resource's
// reads and writes, and the nemesis' fault events. A time is a
// [time.Duration] since the run's start. [MonotonicClock] never returns the
// same instant twice, so any two stamps of one run are ordered.
//
// A [History] is a list of operations ([Op]). Each operation was invoked by
// one worker (a client id ≥ 0, or [Nemesis] for fault events) at Op.Invoke
// and returned at Op.Complete with an [Outcome]:
//
//   - [Ok]: the call returned and took effect.
//   - [Fail]: the call returned and certainly did not take effect.
//   - [Unknown]: the call may or may not have taken effect (a timeout, a lost
//     reply), or it never returned before the history was taken (then
//     Complete is 0 and [Op.Returned] is false).
//
// Kinds and their payload:
//
//   - [Acquire]: Token is the fencing token the lock handed out (0 = the lock
//     gives none), ValidUntil the lease's validity deadline on the test clock
//     (0 = the lock reports none). Set only when the outcome is Ok.
//   - [Extend]: Lease is the acquire it extends; on Ok, ValidUntil is the new
//     deadline.
//   - [Read]: Value is the counter value read.
//   - [Write]: Value is the value written and Token the token presented.
//     Ok means the resource accepted the write, Fail means it rejected it
//     (a fenced resource refusing a stale token); see [Op.Accepted] and
//     [Op.Rejected].
//   - [Release]: Lease is the acquire it ends. Record one whenever the
//     worker stops using the lease, for whatever reason (unlock, lease lost,
//     giving up): the worker's tenure ends at the release's invoke.
//   - [NemesisStart], [NemesisEnd]: Name names the fault ("partition n1",
//     "pause client 2"); a fault window runs from a start to the next end of
//     the same name.
//
// Lease links an operation to the acquisition it was made under: it is the
// [OpID] of the Ok acquire. Reads, writes, extends and releases should carry
// it; the checker falls back to "the worker's latest Ok acquire" when it is 0.
//
// # Recording
//
// A [Recorder] is safe for concurrent use. Invoke stamps the invoke time and
// returns a [Call]; one of the Call's completion methods stamps the return
// time and the outcome:
//
//	clock := history.NewClock()
//	rec := history.NewRecorder(clock)
//	c := rec.Acquire(worker)
//	lease, err := mu.TryLock(ctx)
//	if err != nil { c.Fail(err) } else { c.Acquired(lease.Token(), clock.At(lease.Until())) }
//	...
//	rec.Release(worker, c.ID()).Ok()
//	h := rec.History()
//
// # Encoding
//
// [History.WriteJSON] and [ReadJSON] store a history as JSON (times as
// integer nanoseconds), so real histories can be kept under testdata/ as
// regression inputs. [ReadJSON] validates what it reads.
package history
