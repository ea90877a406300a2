package adapters

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/quorum"
)

type qlLocker struct {
	c *quorum.Client
}

func newQuorumlock(clients []redis.UniversalClient, cfg Config) (*qlLocker, error) {
	// Fencing first, so that cfg.Quorum can still say otherwise.
	opts := append([]quorum.Option{quorum.WithFencing(cfg.Fencing)}, cfg.Quorum...)
	if cfg.TTL > 0 {
		opts = append(opts, quorum.WithTTL(cfg.TTL))
	}
	c, err := quorum.New(clients, opts...)
	if err != nil {
		return nil, err
	}
	return &qlLocker{c: c}, nil
}

func (l *qlLocker) Kind() Impl   { return Quorumlock }
func (l *qlLocker) Name() string { return string(Quorumlock) }
func (l *qlLocker) Close() error { return l.c.Close() }

// Client is the quorum.Client behind a quorumlock Maker (nil for others),
// for callers that want the full API (leases' Done, Report, Extend).
func Client(l Maker) *quorum.Client {
	if q, ok := l.(*qlLocker); ok {
		return q.c
	}
	return nil
}

func (l *qlLocker) Mutex(name string) (Mutex, error) {
	m, err := l.c.Mutex(name)
	if err != nil {
		return nil, err
	}
	return qlMutex{m}, nil
}

type qlMutex struct{ m *quorum.Mutex }

func (m qlMutex) TryLock(ctx context.Context) (Lease, error) { return qlLease(m.m.TryLock(ctx)) }
func (m qlMutex) Lock(ctx context.Context) (Lease, error)    { return qlLease(m.m.Lock(ctx)) }

func qlLease(l *quorum.Lease, err error) (Lease, error) {
	if err != nil {
		if errors.Is(err, quorum.ErrNotObtained) {
			return nil, errors.Join(ErrNotObtained, err)
		}
		return nil, err
	}
	return qlHeld{l}, nil
}

type qlHeld struct{ l *quorum.Lease }

func (h qlHeld) Unlock(ctx context.Context) error { return h.l.Unlock(ctx) }
func (h qlHeld) Token() int64                     { return h.l.Token() }
func (h qlHeld) Until() time.Time                 { return h.l.Until() }

// QuorumLease is the *quorum.Lease behind a quorumlock Lease (nil for others).
func QuorumLease(l Lease) *quorum.Lease {
	if h, ok := l.(qlHeld); ok {
		return h.l
	}
	return nil
}
