// Package checker decides, from a recorded history, whether a lock kept
// mutual exclusion and whether the resource it protected stayed correct.
//
// Every check returns a three-way [Result] — [Ok], [Violated] or [Unknown] —
// with a count and the first few offending operations, never a bare bool.
// [Check] runs them all and returns a [Report]; [Report.Summarize] combines
// the checks behind a claim ([Property]).
//
// # Definitions
//
// The workload (see package resource): a worker acquires the lock, reads the
// counter, writes the value it read plus one with its fencing token, and
// releases. The counter starts at 0. The resource's operations are stamped
// under its own lock, so they are disjoint in time and "the resource's order"
// is their invoke order.
//
// Tenure. From the completion of an Ok acquire to the invocation of the
// release of that lease (Op.Lease; without one, the worker's latest
// unreleased Ok acquire). A worker holds one lease at a time, so a tenure
// that is never released ends where the same worker invokes its next
// acquire, or at the history's end. Its validity deadline is the largest
// ValidUntil of the acquire and of the Ok extends completed within it. See
// [Tenures].
//
// Overlapping tenures (Report.MutualExclusion). Two tenures of different
// workers overlap when their half-open intervals [Start, End) intersect;
// Count is the number of overlapping pairs. This is mutual exclusion as the
// clients experienced it: a client paused past its lease still believes it
// holds the lock (Kleppmann's scenario), so a correct lease-based lock can
// fail it and only fencing protects the data. Never Unknown: tenures are
// made of what the workers themselves observed.
//
// Overlapping valid leases (Report.LeaseExclusion). The same over [Start,
// min(End, ValidUntil)): two leases valid at the same time, which the lock
// promised never to grant (the Redlock spec's safety property). Failover
// without WAIT, restart without persistence and clock jumps break it; a
// client pause does not. Unknown when the lock reports no deadlines.
//
// Lost updates (Report.LostUpdates). Walk the resource's operations in
// order, knowing the counter's value (or, after a write of unknown outcome,
// its possible values). An accepted write w is a lost update when the value
// its writer read — the latest read of the same holder (lease) before w,
// each read serving one write; for a write with no such read, w.Value−1 —
// is not the value the counter held just before w: an accepted write of
// someone else came in between and w overwrote it. Count is the number of
// such writes. Deficit = accepted writes − final value, the number of
// increments missing from the counter. Unknown when there are writes of
// unknown outcome and no lost update was found.
//
// Stale writes (Report.StaleAccepted, Report.StaleRejected). An accepted
// write is stale when (a) it presented a token lower than a token the
// resource had already accepted, or (b) it was invoked after its lease's
// validity deadline and after an accepted write of a holder whose lease
// began after this one (an earlier holder's late write, which a fence lets
// through in token order, does not make the next holder's write stale). StaleAccepted counts them (an unfenced
// resource lets them through); it is Unknown when some accepted write had
// neither a token nor a deadline to judge it by. StaleRejected counts the
// writes a fenced resource rejected, always Ok.
//
// Token monotonicity (Report.TokenOrder). Ok acquisitions ordered by
// completion time must carry strictly increasing tokens. An acquisition
// whose token is not above every earlier one is a regression (a repeated
// token counts: two holders with one token defeat fencing). Acquisitions
// without a token are skipped; Unknown when none had one.
//
// Availability and latency (Report.Acquires, Report.Latency). Availability
// is Ok acquisitions / attempted acquisitions. Latency is invoke→complete of
// Ok acquisitions, nearest-rank p50 and p99.
//
// Lock kinds. An acquire may name the locks it holds (Op.Locks; none: the
// run's one lock) and be shared (Op.Shared, a read hold). Two tenures
// exclude each other when their name sets meet (MutexAll's per-name
// exclusion; a batched client's distinct names) and at least one is
// exclusive (a read-write lock's readers may overlap each other, never a
// writer). Every overlap check above counts only pairs that exclude each
// other. Beyond exclusion:
//
// Signal first (Report.SignalFirst; renewed leases). Cut each tenure at
// its loss signal less the signal grace (a timer's delay on a loaded
// machine): [Start, min(End, Signalled − grace)). Count is the number of excluding pairs that still overlap: a
// holder told of the loss only after another holder's tenure began, or
// never. Unknown when the leases do not signal.
//
// Writer progress (Report.WriterProgress; read-write locks). Count is the
// number of writers' acquires (Role "writer", each Lock bounded by the
// workload's acquire timeout, 2 s by default) that did not obtain the lock
// with no fault (other than a held critical section) in effect at any
// time from their invoke to their completion, though the lock stood
// free (no other worker's tenure) for at least the wakeup bound
// (WithWakeupBound) at some stretch of that wait. The lock promises no
// writer preference: readers whose tenures overlap throughout may hold a
// writer off, and that is not counted. Unknown without a wakeup bound.
//
// Starvation (Report.Starvation). Count is the number of acquires that
// more than the starvation bound (WithStarveBound) of other workers'
// acquires, invoked after them, completed Ok before (before the history's
// end for one still waiting): a waiter passed over again and again.
// Unknown without a bound.
//
// Fair order (Report.FairOrder; fair locks). Waiter A (Role "fair") is
// queued ahead of waiter B of another worker when A invoked Lock at least
// the fair slack (WithFairSlack, 50 ms: one attempt reaches the queue on
// the nodes) before B. A grant out of order is B's Lock returning Ok while
// A, queued ahead of it, still waited (A's Lock returned later, whatever
// its outcome), with no fault in effect from A's invoke to B's grant. Count
// is the number of such pairs.
//
// Election (Report.Election; the election workload: acquires of Role
// "leader" are campaigns, their tenures terms, their tokens term numbers;
// Observe ops are what followers were given). One leader: no term number
// handed to two campaigns. Terms increase: a term elected after another
// campaign began is above every term elected before that. Observed: each
// follower's terms never go down, and a term that leads for at least the
// wakeup bound, with no fault from FollowerRecovery before its election to
// the bound after it, reaches every follower within the bound (or a later
// term does). Replaced: a term that ended as its leader saw it (Unlock, or
// its loss signal) while another campaign waited is followed within its
// validity at election plus the wakeup bound and the longest Ok Proclaim
// (the new term's publishing round trips, as slow as the run's), faults
// aside. The lost term's
// signal is judged by Signal first. Values: each term's value, checked by
// porcupine as a register of its own that starts at the campaign's value
// (the acquire's Text): its writes are the leader's Proclaim ops (Fail: it
// never happened; Unknown: it may take effect any time after its call),
// its reads the followers' LeaderRead ops and Observe deliveries of the
// term (an Observe op spans from the earliest its read may have begun to
// the delivery).
//
// Fair progress (Report.FairProgress; fair locks). The times some fair
// waiter waited (its Lock pending; gaps up to the fair slack between calls
// count as waiting) are cut at every fair grant. Count is the number of
// pieces longer than the fair bound (WithFairBound) with no fault in
// effect: a line that did not move on, as behind a waiter that died in
// line and whose entry never lapses. The runners' bound is two TTLs (the
// queue-entry timeout, then a holder's lease) plus the wakeup bound.
//
// All or none (Report.AllOrNone; locks over several names, MutexAll).
// Count is the number of excluding pairs of tenures that overlap where one
// of them holds several names: that grant did not hold all of its names.
//
// Guard order (Report.GuardOrder; the guarded workload). Writes through a
// fenced store outside the lock (history.GuardWrite, the project's Redis
// guard) are in one order, the guard's. An accepted write whose token is
// not above a token accepted from another tenure by a write that completed
// before it was invoked is a violation (lower: a stale holder got in;
// equal: two tenures wrote with one token); so is a refused write whose
// token was not below the last token the guard reports (a holder it had to
// let in, such as the newest). Count is the number of such writes.
//
// Linearizability (Report.Register, Report.CriticalSections), checked with
// porcupine against a register model that starts at 0. Register: Ok reads
// and accepted writes as register operations — a sanity check of the
// resource and the recording, which must pass for the in-process resource.
// CriticalSections: each accepted write with the read before it in the same
// tenure as one compare-and-set (read value → written value) over [read
// invoke, write complete]; two critical sections that overlap and both
// succeed cannot be linearized. In both, a write of unknown outcome may take
// effect at any time after its invoke, rejected writes are left out, and a
// final read of the value the resource ended with is appended (unless
// unknown writes make it uncertain). Each porcupine run is bounded by
// [WithTimeout]; running out of time is Unknown.
package checker
