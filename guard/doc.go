// Package guard checks fencing tokens where the protected resource lives, so
// a holder whose lease ended without it noticing (a GC pause, a stalled VM, a
// slow network) cannot overwrite the work of the next holder.
//
// A lock alone cannot stop a paused holder: it wakes up believing it still
// holds the lease and writes. The resource must refuse it. quorum leases with
// WithFencing carry a token that strictly increases across holders
// (Lease.Token); every write carries the token, and the resource keeps the
// highest token it has accepted and refuses anything lower.
//
// Two ready-made guards:
//
//   - Redis: a value kept in Redis, written by a Lua script only if the token
//     is at least the last one accepted for that key (kept next to it, in the
//     same Cluster slot). Refusals are *StaleError with the last token.
//   - SQL: a row in a database/sql table with a token column, updated with
//     UPDATE … SET …, fence_token = $t WHERE id = $k AND fence_token <= $t.
//     It takes a *sql.DB, *sql.Tx or *sql.Conn and imports no driver.
//
// The hand-written SQL pattern, for statements the helper does not build:
//
//	res, err := tx.ExecContext(ctx,
//		`UPDATE accounts SET balance = $1, fence_token = $2
//		  WHERE id = $3 AND fence_token < $2`, balance, token, id)
//	err = guard.Fenced(res, err) // ErrStale when no row was changed
//
// The chaos suite's guarded workload writes through Redis on a node of its
// own, with tokens that cross digit boundaries, and its checker judges the
// order of what the guard accepted and refused (jepsen-like/checker).
//
// Use "<" when each token may write at most once, "<=" when a holder may
// write several times under one lease. The token column must be NOT NULL
// DEFAULT 0 (a NULL compares as unknown, so the row would never be written).
package guard
