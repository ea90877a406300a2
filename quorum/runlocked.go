package quorum

import (
	"context"

	"github.com/quorumlock/quorumlock/internal/oneline"
)

// Do runs fn while holding a lock taken by lock, the Lock (or TryLock) of
// any lock kind: m.Lock, f.Lock of a FairMutex, rw.Lock or rw.RLock of an
// RWMutex. It takes the lock, runs fn
// under a context that is cancelled when ctx ends or the lease ends (the
// watchdog could not renew it: context.Cause is ErrLeaseLost; a fixed lease
// time ran out: ErrLeaseExpired), and releases the lock however fn returns:
// with a value, an error or a panic (which Do re-raises after unlocking).
//
// Do returns fn's error joined with the lease's end: when the lease was lost
// while fn ran, the result wraps ErrLeaseLost even if fn returned nil, since
// fn was not protected throughout. fn should stop promptly when its context
// is done and must not keep using the resource afterwards.
//
// fn is given the lease: lease.Token() is the fencing token to hand to the
// resource (fencing is on by default), as RunLeader gives its function
// the term.
//
//	err := quorum.Do(ctx, m.Lock, func(ctx context.Context, lease *quorum.Lease) error {
//		return store.Write(ctx, v, lease.Token())
//	})
//
// It is the Go form of an annotation-driven lock: the lock's scope is the
// call.
func Do(ctx context.Context, lock func(context.Context) (*Lease, error), fn func(ctx context.Context, lease *Lease) error) (err error) {
	lease, err := lock(ctx)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(lease.Context(), func() { cancel(context.Cause(lease.Context())) })
	defer func() {
		stop()
		cancel(ErrUnlocked)
		// Unlock on a context that outlives a cancelled caller; Unlock
		// bounds its own calls by the release timeout.
		uerr := lease.Unlock(context.WithoutCancel(ctx))
		if r := recover(); r != nil {
			panic(r)
		}
		err = oneline.Join(err, uerr)
	}()
	return fn(fctx, lease)
}
