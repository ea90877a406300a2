package multilock

import "time"

// Policy decides how many sub-locks may fail and how long each may take.
//
// FailedLocksLimit(n) is how many of n sub-locks may be refused or fail while
// the whole still counts as acquired; it must lie in [0, n−1].
// LockWaitTime(remaining, n) is the deadline given to each sub-lock call when
// remaining is left of the attempt's budget.
type Policy interface {
	FailedLocksLimit(n int) int
	LockWaitTime(remaining time.Duration, n int) time.Duration
}

// All is the MultiLock policy: every sub-lock must be granted, and each call
// may use the whole remaining budget.
var All Policy = allPolicy{}

// Majority is the RedLock policy: n/2+1 sub-locks must be granted; each call
// gets remaining/n (at least 1 ms), as Redisson's RedissonRedLock does.
var Majority Policy = majorityPolicy{}

type allPolicy struct{}

func (allPolicy) FailedLocksLimit(int) int                                  { return 0 }
func (allPolicy) LockWaitTime(remaining time.Duration, _ int) time.Duration { return remaining }
func (allPolicy) String() string                                            { return "all" }

type majorityPolicy struct{}

func (majorityPolicy) FailedLocksLimit(n int) int { return n - (n/2 + 1) }
func (majorityPolicy) LockWaitTime(remaining time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	return max(remaining/time.Duration(n), time.Millisecond)
}
func (majorityPolicy) String() string { return "majority" }

// Need is how many of n sub-locks a policy requires.
func Need(p Policy, n int) int { return n - p.FailedLocksLimit(n) }
