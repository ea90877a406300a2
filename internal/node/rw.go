package node

import (
	"context"
	_ "embed"
	"time"
)

var (
	//go:embed rw_acquire.lua
	rwAcquireLua string
	//go:embed rw_release.lua
	rwReleaseLua string
	//go:embed rw_extend.lua
	rwExtendLua string

	rwAcquireScript = script("rw-acquire", promoted(acquireLibLua+rwAcquireLua))
	rwReleaseScript = script("rw-release", promoted(rwReleaseLua))
	rwExtendScript  = script("rw-extend", promoted(rwExtendLua))
)

// RWLock is one attempt's read or write share of a read-write lock on one
// node: what the multilock core drives for a quorum read-write lock.
//
// The lock lives in the same keys as a plain lock of the same name
// (Keys(name)): a hash with a "\x00mode" field ("read" or "write", as
// Redisson's read-write lock keeps it) and one field per attempt holding its
// mode, deadline and owner. Many owners may read; one owner may write, and
// that owner may also read. A plain lock and a read-write lock of one name
// exclude each other. Unlock messages go to the same channel, so Watch works
// unchanged; readers should watch with wakeAll.
type RWLock struct {
	n       *Node
	keys    []string
	channel string
	owner   string
	attempt string
	write   bool
	fencing bool
}

// RWLock returns the handle of one acquisition attempt of a read (write
// false) or write share of read-write lock name by owner. attempt must be
// unique per attempt; fencing makes grants count the fencing counter (shared
// with a plain lock of the same name): it goes up when the lock passes from
// free to held, so successive writers get increasing tokens and readers that
// overlap share one.
func (n *Node) RWLock(name, owner, attempt string, write, fencing bool) *RWLock {
	k := n.Keys(name)
	return &RWLock{n: n, keys: []string{k.Lock, k.Fence}, channel: k.Channel, owner: owner, attempt: attempt, write: write, fencing: fencing}
}

func (l *RWLock) String() string { return l.n.name }

func (l *RWLock) args(ttl time.Duration) []any {
	mode := "r"
	if l.write {
		mode = "w"
	}
	return []any{l.owner, ms(ttl), l.attempt, l.n.fenceArg(l.fencing), mode}
}

// Acquire runs the read-write acquire script once.
func (l *RWLock) Acquire(ctx context.Context, ttl time.Duration) (granted bool, remaining time.Duration, fence int64, err error) {
	granted, remaining, fence, _, err = l.AcquireChecked(ctx, ttl, Checks{})
	return
}

// AcquireChecked is Acquire with checks in the same round trip.
func (l *RWLock) AcquireChecked(ctx context.Context, ttl time.Duration, chk Checks) (granted bool, remaining time.Duration, fence int64, c Checked, err error) {
	return l.n.acquireChecked(ctx, rwAcquireScript, l.keys, l.args(ttl), chk)
}

// Release gives back this attempt's share; true when it held one. It
// publishes on the unlock channel when the lock became free or readers may
// enter.
func (l *RWLock) Release(ctx context.Context) (bool, error) { return l.release(ctx, "1") }

// Rollback is Release for an attempt that never held the lock (it failed
// the quorum): it tells no waiter.
func (l *RWLock) Rollback(ctx context.Context) (bool, error) { return l.release(ctx, "0") }

func (l *RWLock) release(ctx context.Context, tell string) (bool, error) {
	v, err := l.n.evalInt(ctx, rwReleaseScript, l.keys[:1], l.attempt, l.channel, tell)
	return v == 1, err
}

// Extend moves this attempt's share to now+ttl where it still holds one;
// never acquires.
func (l *RWLock) Extend(ctx context.Context, ttl time.Duration) (bool, error) {
	ok, _, err := l.ExtendChecked(ctx, ttl, Checks{})
	return ok, err
}

// ExtendChecked is Extend with checks in the same round trip.
func (l *RWLock) ExtendChecked(ctx context.Context, ttl time.Duration, chk Checks) (bool, Checked, error) {
	v, c, err := l.n.checkedInt(ctx, rwExtendScript, l.keys[:1], []any{l.attempt, ms(ttl)}, chk)
	return v == 1, c, err
}

// KeepsFence reports that the fence Acquire returns with a grant is the
// counter as stored on the node (multilock.FenceKeeper), as for Lock.
func (l *RWLock) KeepsFence() bool { return l.fencing }

// Fence writes token back set-if-greater where this attempt's share stands.
func (l *RWLock) Fence(ctx context.Context, token int64) (bool, error) {
	ok, _, err := l.FenceChecked(ctx, token, Checks{})
	return ok, err
}

// FenceChecked is Fence with checks in the same round trip.
func (l *RWLock) FenceChecked(ctx context.Context, token int64, chk Checks) (bool, Checked, error) {
	v, c, err := l.n.checkedInt(ctx, fenceScript, l.keys, []any{l.attempt, token, l.n.retentionMS()}, chk)
	return v == 1, c, err
}
