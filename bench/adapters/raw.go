package adapters

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// rawDelete is the usual compare-and-delete.
var rawDelete = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

type rawLocker struct {
	clients []redis.UniversalClient
	ttl     time.Duration
	delay   time.Duration
	seq     atomic.Uint64
	id      string
}

var rawInstances atomic.Uint64

func newRaw(clients []redis.UniversalClient, cfg Config) *rawLocker {
	l := &rawLocker{clients: clients, ttl: cfg.TTL, delay: cfg.RetryDelay}
	if l.ttl == 0 {
		l.ttl = 10 * time.Second
	}
	if l.delay == 0 {
		l.delay = 100 * time.Millisecond
	}
	l.id = strconv.FormatInt(time.Now().UnixNano(), 36) + "." + strconv.FormatUint(rawInstances.Add(1), 36) + "."
	return l
}

func (l *rawLocker) Kind() Impl   { return Raw }
func (l *rawLocker) Name() string { return string(Raw) }
func (l *rawLocker) Close() error { return nil }

func (l *rawLocker) Mutex(name string) (Mutex, error) {
	if name == "" {
		return nil, errors.New("adapters: empty lock name")
	}
	return rawMutex{l: l, key: name}, nil
}

type rawMutex struct {
	l   *rawLocker
	key string
}

// each runs fn on every node: inline for one node, else one goroutine per
// node, and counts the trues.
func (l *rawLocker) each(fn func(c redis.UniversalClient) bool) int {
	if len(l.clients) == 1 {
		if fn(l.clients[0]) {
			return 1
		}
		return 0
	}
	var n atomic.Int32
	var wg sync.WaitGroup
	for _, c := range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if fn(c) {
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(n.Load())
}

func (m rawMutex) TryLock(ctx context.Context) (Lease, error) {
	l := m.l
	val := l.id + strconv.FormatUint(l.seq.Add(1), 36)
	start := time.Now()
	n := l.each(func(c redis.UniversalClient) bool {
		ok, _ := c.SetNX(ctx, m.key, val, l.ttl).Result()
		return ok
	})
	h := rawHeld{m: m, val: val, until: start.Add(l.ttl)}
	if n < len(l.clients)/2+1 {
		if n > 0 {
			_ = h.Unlock(context.WithoutCancel(ctx))
		}
		return nil, notObtained(ctx, nil)
	}
	return h, nil
}

func (m rawMutex) Lock(ctx context.Context) (Lease, error) {
	var t *time.Timer
	for {
		h, err := m.TryLock(ctx)
		if err == nil {
			return h, nil
		}
		if !sleep(ctx, &t, m.l.delay) {
			return nil, notObtained(ctx, err)
		}
	}
}

type rawHeld struct {
	m     rawMutex
	val   string
	until time.Time
}

func (h rawHeld) Unlock(ctx context.Context) error {
	n := h.m.l.each(func(c redis.UniversalClient) bool {
		v, _ := rawDelete.Run(ctx, c, []string{h.m.key}, h.val).Int()
		return v == 1
	})
	if n < len(h.m.l.clients)/2+1 {
		return errors.New("adapters: raw lock released on less than a majority")
	}
	return nil
}
func (h rawHeld) Token() int64     { return 0 }
func (h rawHeld) Until() time.Time { return h.until }
