package drift

import (
	"errors"
	"fmt"
	"time"
)

// DefaultFactor is the default clock drift factor: 1% of the TTL.
const DefaultFactor = 0.01

// Granularity is the fixed part of the drift allowance.
const Granularity = 2 * time.Millisecond

// Allowance is the part of a TTL the client gives up to clock drift:
// ttl·factor + Granularity.
func Allowance(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + Granularity
}

// Validity is how long a lease stays valid after an acquisition that took
// elapsed: ttl − elapsed − Allowance(ttl, factor), never below zero.
func Validity(ttl, elapsed time.Duration, factor float64) time.Duration {
	if elapsed < 0 {
		elapsed = 0
	}
	v := ttl - elapsed - Allowance(ttl, factor)
	if v < 0 {
		return 0
	}
	return v
}

// Check validates a TTL and factor: the factor must lie in [0, 1) and the
// TTL must be larger than its own drift allowance, or no lease could ever be
// valid.
func Check(ttl time.Duration, factor float64) error {
	if factor < 0 || factor >= 1 || factor != factor {
		return fmt.Errorf("quorumlock: factor must be in [0, 1), got %v", factor)
	}
	if ttl <= 0 {
		return fmt.Errorf("quorumlock: ttl must be positive, got %v", ttl)
	}
	if a := Allowance(ttl, factor); ttl <= a {
		return fmt.Errorf("quorumlock: ttl %v is not larger than its drift allowance %v; use a ttl of at least %v", ttl, a, a+time.Millisecond)
	}
	return nil
}

// ErrExpired reports that a lease's validity ended before it could be used.
var ErrExpired = errors.New("quorumlock: validity ended")

// Clock is a monotonic clock. Now must return times whose differences are
// monotonic (time.Now does: it carries a monotonic reading).
type Clock interface {
	Now() time.Time
}

// System is the real clock.
var System Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
