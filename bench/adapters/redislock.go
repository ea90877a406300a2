package adapters

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

type rlLocker struct {
	c     *redislock.Client
	ttl   time.Duration
	delay time.Duration
	name  string
}

func newRedislock(client redis.UniversalClient, cfg Config) *rlLocker {
	l := &rlLocker{c: redislock.New(client), ttl: cfg.TTL, delay: cfg.RetryDelay, name: tuning(Redislock, cfg.RetryDelay)}
	if l.ttl == 0 {
		l.ttl = 10 * time.Second
	}
	if l.delay == 0 {
		l.delay = 100 * time.Millisecond
	}
	return l
}

func (l *rlLocker) Kind() Impl   { return Redislock }
func (l *rlLocker) Name() string { return l.name }
func (l *rlLocker) Close() error { return nil }

func (l *rlLocker) Mutex(name string) (Mutex, error) {
	if name == "" {
		return nil, errors.New("adapters: empty lock name")
	}
	return rlMutex{l: l, name: name}, nil
}

type rlMutex struct {
	l    *rlLocker
	name string
}

func (m rlMutex) TryLock(ctx context.Context) (Lease, error) {
	return m.obtain(ctx, redislock.NoRetry())
}

// Lock polls with a linear retry until ctx ends. redislock bounds a wait
// without a deadline by the TTL; the adapter calls Obtain again after that,
// so Lock waits as long as ctx allows.
func (m rlMutex) Lock(ctx context.Context) (Lease, error) {
	for {
		l, err := m.obtain(ctx, redislock.LinearBackoff(m.l.delay))
		if err == nil || ended(ctx) != nil || !errors.Is(err, ErrNotObtained) {
			return l, err
		}
	}
}

func (m rlMutex) obtain(ctx context.Context, retry redislock.RetryStrategy) (Lease, error) {
	start := time.Now()
	l, err := m.l.c.Obtain(ctx, m.name, m.l.ttl, &redislock.Options{RetryStrategy: retry})
	switch {
	case err == nil:
		return rlHeld{l: l, until: start.Add(m.l.ttl)}, nil
	case errors.Is(err, redislock.ErrNotObtained), ended(ctx) != nil:
		// With the context's deadline on the socket (ContextTimeoutEnabled)
		// an expired wait shows as an i/o timeout.
		return nil, notObtained(ctx, err)
	}
	return nil, err
}

type rlHeld struct {
	l     *redislock.Lock
	until time.Time
}

func (h rlHeld) Unlock(ctx context.Context) error { return h.l.Release(ctx) }
func (h rlHeld) Token() int64                     { return 0 }
func (h rlHeld) Until() time.Time                 { return h.until }
