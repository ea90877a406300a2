// Package workload runs the lock workload of the chaos matrix: workers,
// each on its own lock client, take a named lock, read a shared counter
// from a test-owned resource, "work" for a random time, write the value
// read plus one with their fencing token, and unlock. Every step is
// recorded in a history (package history) for the checker.
//
// # The lock under test
//
// [Locker] is the smallest interface a lock needs to take part: TryLock and
// Lock return a [Lease] with Unlock, Token (0 for locks without fencing) and
// Until (the end of the lease's validity as the client believes it). The
// quorum lock is adapted by [Quorum]; other implementations (redsync,
// redislock) are adapted in the bench module, so this module does not
// depend on them.
//
// # One tenure
//
//  1. Acquire: Lock with a bounded wait (Config.AcquireTimeout). Recorded
//     as Ok with the token and the validity deadline, Fail when the lock
//     says it was not obtained (errors.Is(err, Config.NotObtained)), Unknown
//     for any other error.
//  2. Read the counter (resource.Counter.Read).
//  3. Work for a random time in Config.Work.
//  4. Check the lease: a worker whose lease has already expired gives up
//     without writing, as a careful client would.
//  5. Consult the worker's Gate (a chaos.ClientPause): this is where a
//     process pause hurts — after the check, before the write, exactly as
//     in Kleppmann's "How to do distributed locking". A worker without a
//     gate never pauses.
//  6. Write read+1 with the lease's token (the resource may reject it).
//  7. Release: recorded before Unlock is called; the tenure ends there.
//
// Then the worker thinks for a random time in Config.Think and starts
// over, until the run's context ends; a tenure in progress is finished
// (so the history has no dangling acquisitions), and an acquisition under
// way is bounded by AcquireTimeout, not cut by the end of the run.
//
// # Leases that can expire
//
// The workload is meant for locks with fixed lease times (quorum's
// WithLeaseTime): a watchdog that renews a lease on its own timer keeps
// renewing while the worker's goroutine is blocked in its gate, which is
// not what a paused process does (a paused process renews nothing). With
// a fixed lease the paused holder's lease really expires, the next holder
// gets the lock, and the paused write arrives late — stale.
package workload
