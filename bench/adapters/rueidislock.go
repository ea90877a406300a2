package adapters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidislock settings, read from its source (v1.0.79):
//   - KeyValidity 5 s by default; renewed every KeyValidity/2 while held
//     (we pass Config.TTL when set);
//   - KeyMajority 2 by default: the lock is 3 keys on the SAME Redis
//     deployment (or a Cluster's slots), of which 2 must be taken. Over one
//     standalone node that only triples the work, so the adapter uses 1,
//     as its README advises for one instance. It cannot span independent
//     masters: N>1 is unsupported here;
//   - waiting is driven by client-side-caching invalidations (CLIENT
//     TRACKING); NoLoopTracking (Redis ≥ 7.0.5) drops notifications of the
//     client's own writes. Default off; Config.Tuned turns it on;
//   - expiry is set with SET NX PXAT from the client's wall clock;
//   - the lock's context is cancelled when a majority of its keys is lost.
type rdLocker struct {
	l     rueidislock.Locker
	ttl   time.Duration
	label string
}

func newRueidislock(client redis.UniversalClient, cfg Config) (*rdLocker, error) {
	c, ok := client.(*redis.Client)
	if !ok {
		return nil, fmt.Errorf("%w: rueidislock needs a standalone go-redis client to copy the address from, got %T", ErrUnsupported, client)
	}
	o := c.Options()
	ttl := cfg.TTL
	if ttl == 0 {
		ttl = 5 * time.Second
	}
	opt := rueidislock.LockerOption{
		KeyPrefix:      "rueidislock",
		KeyValidity:    ttl,
		KeyMajority:    1,
		NoLoopTracking: cfg.Tuned,
		ClientOption: rueidis.ClientOption{
			InitAddress:       []string{o.Addr},
			Username:          o.Username,
			Password:          o.Password,
			ForceSingleClient: true,
		},
	}
	l, err := rueidislock.NewLocker(opt)
	if err != nil {
		return nil, err
	}
	label := string(Rueidislock)
	if cfg.Tuned {
		label += "(noloop)"
	}
	return &rdLocker{l: l, ttl: ttl, label: label}, nil
}

func (l *rdLocker) Kind() Impl   { return Rueidislock }
func (l *rdLocker) Name() string { return l.label }
func (l *rdLocker) Close() error { l.l.Close(); return nil }

func (l *rdLocker) Mutex(name string) (Mutex, error) {
	if name == "" {
		return nil, errors.New("adapters: empty lock name")
	}
	return rdMutex{l: l, name: name}, nil
}

type rdMutex struct {
	l    *rdLocker
	name string
}

func (m rdMutex) TryLock(ctx context.Context) (Lease, error) {
	return m.obtain(ctx, m.l.l.TryWithContext)
}

func (m rdMutex) Lock(ctx context.Context) (Lease, error) {
	return m.obtain(ctx, m.l.l.WithContext)
}

// obtain runs one of rueidislock's calls. Its lease is a child of the
// context it is given, so a caller's short wait deadline would also end
// the lease the moment Lock returns (and shorten its validity to the
// deadline). The adapter gives rueidislock a context detached from ctx's
// deadline and ends it only while the call is still waiting; if ctx ends
// at the moment of the grant the lease is given back and Lock fails.
func (m rdMutex) obtain(ctx context.Context, call func(context.Context, string) (context.Context, context.CancelFunc, error)) (Lease, error) {
	base, stop := context.WithCancel(context.WithoutCancel(ctx))
	var mu sync.Mutex
	returned, abandoned := false, false
	watch := make(chan struct{})
	go func() {
		defer close(watch)
		select {
		case <-ctx.Done():
			mu.Lock()
			if !returned {
				abandoned = true
				stop()
			}
			mu.Unlock()
		case <-base.Done():
		}
	}()
	start := time.Now()
	lctx, release, err := call(base, m.name)
	mu.Lock()
	returned = true
	gaveUp := abandoned
	mu.Unlock()
	if err == nil && (gaveUp || lctx.Err() != nil) {
		release()
		err = context.Cause(ctx)
	}
	if err != nil {
		stop()
		<-watch
		if errors.Is(err, rueidislock.ErrNotLocked) || ended(ctx) != nil || errors.Is(err, context.Canceled) {
			return nil, notObtained(ctx, err)
		}
		return nil, err
	}
	return &rdHeld{ctx: lctx, release: func() { release(); stop(); <-watch }, until: start.Add(m.l.ttl)}, nil
}

type rdHeld struct {
	ctx     context.Context
	release func()
	once    sync.Once
	until   time.Time
}

// Unlock cancels the lock's context; rueidislock deletes its keys and
// returns when they are gone.
func (h *rdHeld) Unlock(context.Context) error {
	h.once.Do(h.release)
	return nil
}
func (h *rdHeld) Token() int64 { return 0 }

// Until is the first validity deadline; rueidislock renews in the
// background without telling when, so Context is its real signal.
func (h *rdHeld) Until() time.Time { return h.until }

// Context ends when rueidislock sees the lock lost (or it is unlocked).
func (h *rdHeld) Context() context.Context { return h.ctx }

// Done is Context's end as the chaos workload's loss signal
// (workload.Signaller): the checker then judges when the holder was told.
func (h *rdHeld) Done() <-chan struct{} { return h.ctx.Done() }
