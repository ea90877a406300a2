package quorum

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/drift"
)

// WithLockTTL sets this lock's TTL, overriding the client's WithTTL for its
// acquisitions only: the keys live d on a node without renewal, the watchdog
// renews every d/3, and a lost lease is noticed within d. A short TTL hands
// a crashed holder's lock over sooner; a long one survives longer pauses
// and node stalls. Default 0: the client's TTL. With WithLeaseTime the
// lease time wins (it is the TTL of a lease that is not renewed).
//
// With WithRestartDetection, give it a delay at least as long as the
// longest per-lock TTL in use: its default waits the client's TTL.
func WithLockTTL(d time.Duration) MutexOption { return func(c *mutexConfig) { c.ttl = d } }

// checkLockTTL validates WithLockTTL (newMutex).
func checkLockTTL(d time.Duration, factor float64) error {
	if d < 0 {
		return fmt.Errorf("quorumlock: WithLockTTL(%v): the TTL must not be negative (0: the client's TTL)", d)
	}
	if err := checkMaxTTL("WithLockTTL", d); err != nil {
		return err
	}
	if d > 0 {
		if err := drift.Check(d, factor); err != nil {
			return optionErr(fmt.Sprintf("WithLockTTL(%v)", d), err)
		}
	}
	return nil
}
