package guard

import (
	"errors"
	"fmt"
)

// ErrStale: the write carried a fencing token lower than one the resource
// has already accepted; the writer's lease has ended and another holder has
// written since. Stop the critical section: do not retry with the same token.
var ErrStale = errors.New("quorumlock: stale fencing token")

// ErrNoRow: the row to update does not exist (SQL guard). Create it first,
// with the token column at 0.
var ErrNoRow = errors.New("quorumlock: no such row")

// StaleError is a refused write: Token was offered, Last had been accepted
// (0 when unknown). It unwraps to ErrStale.
type StaleError struct {
	Key   string
	Token int64
	Last  int64
}

func (e *StaleError) Error() string {
	if e.Last == 0 {
		return fmt.Sprintf("quorumlock: %s: token %d refused: a newer holder has written; this lease has ended, stop the critical section", e.Key, e.Token)
	}
	return fmt.Sprintf("quorumlock: %s: token %d refused: token %d was already accepted, so this lease has ended; stop the critical section", e.Key, e.Token, e.Last)
}

func (e *StaleError) Unwrap() error { return ErrStale }
