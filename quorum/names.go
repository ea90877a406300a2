package quorum

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxNameLen is the longest lock or election name, in bytes: every key of
// a lock carries its name, and the fencing counter outlives the lock.
const MaxNameLen = 1024

// MaxTTL is the longest lock TTL (WithTTL, of the client or of one lock, WithLeaseTime):
// restart detection keeps a restarted node out for a TTL, so
// a longer one would keep it out for days.
const MaxTTL = 24 * time.Hour

// checkMaxTTL refuses a TTL above MaxTTL, naming option.
func checkMaxTTL(option string, d time.Duration) error {
	if d > MaxTTL {
		return fmt.Errorf("quorumlock: %s(%v): above the longest TTL, %v (MaxTTL)", option, d, MaxTTL)
	}
	return nil
}

// ErrReservedName: a lock name that starts with ElectionPrefix belongs to
// an election (Client.Election); Mutex and the other lock kinds refuse it.
var ErrReservedName = errors.New("quorumlock: the lock name is reserved for elections")

// checkName says what is wrong with a lock name: empty, longer than
// MaxNameLen, or holding a NUL.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("quorumlock: empty lock name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("quorumlock: lock name of %d bytes is above the limit of %d (MaxNameLen)", len(name), MaxNameLen)
	case strings.ContainsRune(name, 0):
		// The keys of a name that starts with '}' carry a NUL in front
		// (node.Keys), which no name may then fake.
		return errors.New("quorumlock: a lock name must not contain a NUL byte")
	}
	return nil
}

// checkLockName is checkName for the lock kinds, which may not take an
// election's name.
func checkLockName(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if strings.HasPrefix(name, ElectionPrefix) {
		return fmt.Errorf("%w: %q starts with %q; use Client.Election(%q) for the election, or another name for a lock", ErrReservedName, name, ElectionPrefix, strings.TrimPrefix(name, ElectionPrefix))
	}
	return nil
}
