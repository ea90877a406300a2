package resource

import (
	"errors"
	"fmt"
	"sync"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// ErrStaleToken is wrapped by the error a fenced Counter returns when it
// rejects a write.
var ErrStaleToken = errors.New("resource: stale fencing token")

// StaleTokenError is a rejected write: Token was presented while Highest had
// already been accepted.
type StaleTokenError struct {
	Token, Highest uint64
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("resource: stale fencing token %d, %d already accepted", e.Token, e.Highest)
}

// Is makes errors.Is(err, ErrStaleToken) true.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }

// Counter is the shared counter. Safe for concurrent use; must not be copied.
type Counter struct {
	rec    *history.Recorder
	fenced bool

	mu       sync.Mutex
	value    int64
	highest  uint64
	accepted int
	rejected int
}

// NewFenced returns a counter that rejects writes with a token lower than
// the highest it has seen — accepted in a write, or presented with a read
// (ReadToken) — recording into rec.
func NewFenced(rec *history.Recorder) *Counter { return &Counter{rec: rec, fenced: true} }

// NewUnfenced returns a counter that accepts every write, recording into rec.
func NewUnfenced(rec *history.Recorder) *Counter { return &Counter{rec: rec} }

// Fenced reports whether the counter checks tokens.
func (c *Counter) Fenced() bool { return c.fenced }

// String is "fenced" or "unfenced".
func (c *Counter) String() string {
	if c.fenced {
		return "fenced"
	}
	return "unfenced"
}

// Read returns the current value and records a read by worker under lease
// (the id of its Ok acquire; 0 if not known), without a token.
func (c *Counter) Read(worker int, lease history.OpID) int64 { return c.ReadToken(worker, lease, 0) }

// ReadToken is Read presenting a fencing token (0: none). A fenced counter
// learns it: from then on a write with a lower token is rejected. A fenced
// storage must fence reads too for a read-modify-write to be protected:
// checking writes alone, a stale holder's write that lands between a newer
// holder's read and its write is accepted, and the newer write then
// overwrites it — a lost update behind a fence (the matrix's client-pause
// with a 250 ms lease showed it).
func (c *Counter) ReadToken(worker int, lease history.OpID, token uint64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	call := c.rec.Invoke(history.Op{Worker: worker, Kind: history.Read, Lease: lease, Token: token})
	if c.fenced {
		c.highest = max(c.highest, token)
	}
	v := c.value
	call.ReadValue(v)
	return v
}

// Write sets the counter to value if the token passes (always, when
// unfenced) and records the write by worker under lease with the token
// presented. It returns nil when accepted and a *StaleTokenError (wrapping
// ErrStaleToken) when rejected.
func (c *Counter) Write(worker int, lease history.OpID, value int64, token uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	call := c.rec.Invoke(history.Op{Worker: worker, Kind: history.Write, Lease: lease, Value: value, Token: token})
	if c.fenced && token < c.highest {
		// Equal is accepted: a holder's repeated writes under one lease.
		err := &StaleTokenError{Token: token, Highest: c.highest}
		c.rejected++
		call.Fail(err)
		return err
	}
	c.value = value
	c.highest = max(c.highest, token)
	c.accepted++
	call.Ok()
	return nil
}

// Value returns the current value without recording a read (for the
// workload's own summary; the checker uses the history).
func (c *Counter) Value() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.value
}

// Highest returns the highest token seen so far, in accepted writes and
// fenced reads (0 if none).
func (c *Counter) Highest() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.highest
}

// Counts returns how many writes were accepted and rejected.
func (c *Counter) Counts() (accepted, rejected int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.accepted, c.rejected
}
