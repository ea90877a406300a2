// Package resource is the shared resource that the workers of a lock
// workload protect: one in-process integer counter, owned by the test, that
// stamps every read and write with the run's one clock and records them in
// the history.
//
// # Model
//
// A worker holding the lock reads the counter, "works", and writes the value
// it read plus one, presenting its fencing token. The resource serialises
// all calls behind one mutex and takes both stamps of a call (invoke and
// complete) while holding it, so in the history the resource's operations
// never overlap in time and their invoke order is the order in which the
// resource applied them. That order is what the checker's lost-update and
// stale-write checks rely on.
//
// Two variants:
//
//   - Unfenced ([NewUnfenced]) accepts every write: a plain database row
//     that trusts whoever talks to it.
//   - Fenced ([NewFenced]) keeps the highest token it has accepted and
//     rejects a write whose token is lower (Kleppmann, "How to do
//     distributed locking", 2016). A write with a token equal to the highest
//     is accepted: a holder may write several times under its one lease, and
//     a lock that hands the same token to two holders is caught by the
//     checker's token-monotonicity check rather than hidden here. Token 0
//     means "no token"; it is lower than any real token, so once a real token
//     was accepted a fenced resource rejects tokenless writes, and a fenced
//     resource that only ever sees token 0 behaves like an unfenced one.
//
// Reads are never fenced. The counter starts at 0.
//
// A rejected write is recorded with outcome Fail and returns an error
// wrapping [ErrStaleToken]; an accepted write is recorded with outcome Ok.
package resource
