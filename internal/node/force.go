package node

import (
	"context"
	"time"
)

// ForcedRecordTTL is how long the record of a force-unlock (who, when) is
// kept next to the lock.
const ForcedRecordTTL = 24 * time.Hour

// Force says how ForceRelease forces a lock.
type Force struct {
	// By names who does it (an operator, a tool), as they gave it; recorded
	// with the time.
	By string
	// Via says where the force came from as the tool knows it (e.g.
	// "console 10.0.0.5:51234"), kept apart from By so that no text typed
	// into By can pass for it. Empty for none.
	Via string
	// Hold, when positive, leaves a tombstone in the lock's place that
	// refuses every acquisition for that long, and does not wake waiters:
	// call FinishForce once every node was forced. A caller that forces
	// several nodes one by one needs it: otherwise a waiter could win the
	// nodes already forced and lose those forced after, left holding less
	// than a quorum while it thinks it holds the lock. Zero removes the lock
	// and wakes waiters at once.
	Hold time.Duration
}

// ForceRelease deletes lock name whoever holds it (an operator's tool) and
// wakes its waiters, or holds the name as f.Hold says. Where a lock was
// there it records f.By and the time in Keys(name).Forced for
// ForcedRecordTTL, so Inspect shows it; where none was it records nothing.
// It reports whether a lock was there. The fencing counter is kept.
func (n *Node) ForceRelease(ctx context.Context, name string, f Force) (bool, error) {
	k := n.Keys(name)
	hold := int64(0)
	if f.Hold > 0 {
		hold = ms(f.Hold)
	}
	v, err := n.evalInt(ctx, forceReleaseScript, []string{k.Lock, k.Forced}, k.Channel, f.record(), time.Now().UnixMilli(), ForcedRecordTTL.Milliseconds(), hold)
	return v == 1, err
}

// FinishForce ends a held force (Force.Hold): it removes the tombstone (only
// that) and wakes the waiters of lock name.
func (n *Node) FinishForce(ctx context.Context, name string) error {
	k := n.Keys(name)
	_, err := n.eval(ctx, forceFinishScript, []string{k.Lock}, k.Channel)
	return err
}

// viaSep parts By from Via in the stored record ("by" field): a NUL, which
// admin.ForceUnlock refuses in By, so a record written without Via reads
// back the same and none can be made to show one it was not given.
const viaSep = "\x00"

// record is the "by" field a force stores.
func (f Force) record() string {
	if f.Via == "" {
		return f.By
	}
	return f.By + viaSep + f.Via
}

// Forced is the record of the last force-unlock of a lock on a node.
type Forced struct {
	By      string    // who forced it, as the operator gave it
	Via     string    // where from, as the tool knew it (Force.Via); may be empty
	At      time.Time // when, on the operator's clock
	Removed bool      // whether the lock was present on this node (a record is made only then)
}
