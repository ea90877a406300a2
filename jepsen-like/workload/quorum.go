package workload

import (
	"context"
	"errors"

	"github.com/quorumlock/quorumlock/quorum"
)

// Quorum adapts a quorum mutex to Locker. Errors wrapping
// quorum.ErrNotObtained also wrap ErrNotObtained.
func Quorum(m *quorum.Mutex) Locker { return quorumLocker{m} }

type quorumLocker struct{ m *quorum.Mutex }

func (q quorumLocker) TryLock(ctx context.Context) (Lease, error) {
	return wrap(q.m.TryLock(ctx))
}

func (q quorumLocker) Lock(ctx context.Context) (Lease, error) {
	return wrap(q.m.Lock(ctx))
}

func wrap(l *quorum.Lease, err error) (Lease, error) {
	if err != nil {
		if errors.Is(err, quorum.ErrNotObtained) {
			err = errors.Join(ErrNotObtained, err)
		}
		return nil, err
	}
	return l, nil
}

var _ Lease = (*quorum.Lease)(nil)
