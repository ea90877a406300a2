package adapters

import (
	"context"
	"errors"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

type rsLocker struct {
	rs   *redsync.Redsync
	opts []redsync.Option
	name string
}

func newRedsync(clients []redis.UniversalClient, cfg Config) *rsLocker {
	pools := make([]rsredis.Pool, len(clients))
	for i, c := range clients {
		pools[i] = goredis.NewPool(c)
	}
	var opts []redsync.Option
	if cfg.TTL > 0 {
		opts = append(opts, redsync.WithExpiry(cfg.TTL))
	}
	if cfg.RetryDelay > 0 {
		opts = append(opts, redsync.WithRetryDelay(cfg.RetryDelay))
	}
	return &rsLocker{rs: redsync.New(pools...), opts: opts, name: tuning(Redsync, cfg.RetryDelay)}
}

func (l *rsLocker) Kind() Impl   { return Redsync }
func (l *rsLocker) Name() string { return l.name }
func (l *rsLocker) Close() error { return nil }

func (l *rsLocker) Mutex(name string) (Mutex, error) {
	if name == "" {
		return nil, errors.New("adapters: empty lock name")
	}
	return rsMutex{l: l, name: name}, nil
}

// rsMutex makes a redsync.Mutex per acquisition: a redsync.Mutex keeps the
// value and validity of its latest lock, so it is one lease, not a lock name.
type rsMutex struct {
	l    *rsLocker
	name string
}

func (m rsMutex) TryLock(ctx context.Context) (Lease, error) {
	mu := m.l.rs.NewMutex(m.name, m.l.opts...)
	if err := mu.TryLockContext(ctx); err != nil {
		return nil, notObtained(ctx, err)
	}
	return rsHeld{mu}, nil
}

// Lock calls LockContext until it succeeds or ctx ends: LockContext itself
// gives up after its tries (32 by default), and redsync's documentation says
// to call it again.
func (m rsMutex) Lock(ctx context.Context) (Lease, error) {
	for {
		mu := m.l.rs.NewMutex(m.name, m.l.opts...)
		err := mu.LockContext(ctx)
		if err == nil {
			return rsHeld{mu}, nil
		}
		if ended(ctx) != nil {
			return nil, notObtained(ctx, err)
		}
	}
}

type rsHeld struct{ m *redsync.Mutex }

func (h rsHeld) Unlock(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("adapters: redsync released the lock on less than a quorum")
	}
	return err
}
func (h rsHeld) Token() int64     { return 0 }
func (h rsHeld) Until() time.Time { return h.m.Until() }
