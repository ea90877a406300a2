package node

import (
	"sync/atomic"
	"time"
)

// rearmFraction: the fencing fast path re-arms a counter's retention at
// most once per retention/rearmFraction per ReusedKeys, so a counter is
// kept at least (1 − 1/rearmFraction) of the retention after its last use.
const rearmFraction = 100

// fencedKeys is what the fencing fast path (acquireFenced) keeps for one
// name on one node between the attempts made from one ReusedKeys.
type fencedKeys struct {
	// fence: Keys.Fence as a command argument, boxed once instead of per
	// attempt (the lock's key and value are the Lock's lockArg, valArg).
	fence any
	// ttl: the last ttl argument in ms, boxed (*msArg).
	ttl atomic.Pointer[msArg]
	// rearmed: monotonic() when the last PEXPIRE of the counter that
	// answered 1 was sent; 0 for never.
	rearmed atomic.Int64
}

type msArg struct {
	ms  int64
	arg any
}

// ttlArg is ms(ttl) as a command argument, boxed once per ttl.
func (f *fencedKeys) ttlArg(ttl time.Duration) any {
	m := ms(ttl)
	if c := f.ttl.Load(); c != nil && c.ms == m {
		return c.arg
	}
	c := &msArg{ms: m, arg: m}
	f.ttl.Store(c)
	return c.arg
}

// due reports whether an attempt sent at now must re-arm the counter's
// retention: never re-armed from these keys, or not within every.
func (f *fencedKeys) due(now int64, every time.Duration) bool {
	r := f.rearmed.Load()
	return r == 0 || now-r >= int64(every)
}

// rearmedAt records a PEXPIRE sent at now that set the counter's expiry.
// An older now than the one stored only makes the next re-arm come sooner.
func (f *fencedKeys) rearmedAt(now int64) { f.rearmed.Store(now) }

// clockBase anchors monotonic: time.Since reads the monotonic clock, which
// a step of the wall clock does not move.
var clockBase = time.Now()

// monotonic is the process's monotonic clock in ns, > 0.
func monotonic() int64 { return int64(time.Since(clockBase)) + 1 }
