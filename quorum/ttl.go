package quorum

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/drift"
)

// checkLockTTL validates WithTTL given to one lock (newMutex).
func checkLockTTL(d time.Duration, factor float64) error {
	if d < 0 {
		return fmt.Errorf("quorumlock: WithTTL(%v) of a lock: the TTL must not be negative (0: the client's TTL)", d)
	}
	if err := checkMaxTTL("WithTTL", d); err != nil {
		return err
	}
	if d > 0 {
		if err := drift.Check(d, factor); err != nil {
			return optionErr(fmt.Sprintf("WithTTL(%v)", d), err)
		}
	}
	return nil
}
