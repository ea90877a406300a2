package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/quorum"
)

// Impl names an implementation.
type Impl string

// The implementations.
const (
	// Quorumlock is this project's quorum.Client.
	Quorumlock Impl = "quorumlock"
	// Redsync is github.com/go-redsync/redsync/v4 through its go-redis v9 pool.
	Redsync Impl = "redsync"
	// Redislock is github.com/bsm/redislock; it supports one node only.
	Redislock Impl = "redislock"
	// Raw is the floor: SET NX PX on every node (one goroutine per node when
	// there are several), a majority check, and a Lua compare-and-delete.
	// No validity, no drift, no reentrancy: it only shows what the round
	// trips cost.
	Raw Impl = "raw"
	// Rueidislock is github.com/redis/rueidis/rueidislock on one node
	// (KeyMajority 1): it waits on client-side-caching invalidations and
	// renews in the background. It supports one node only.
	Rueidislock Impl = "rueidislock"
)

// Kinds lists every implementation.
var Kinds = []Impl{Quorumlock, Redsync, Redislock, Raw, Rueidislock}

// Errors.
var (
	// ErrNotObtained: the lock was not obtained (held by someone else, not
	// enough nodes answered, or the context ended first).
	ErrNotObtained = workload.ErrNotObtained
	// ErrUnsupported: the implementation cannot do what the Config asks
	// (redislock on several nodes, fencing on a peer without tokens).
	ErrUnsupported = errors.New("adapters: not supported by this implementation")
)

// Config selects and tunes an implementation.
type Config struct {
	// Kind is the implementation; required.
	Kind Impl
	// TTL is the lock's time to live on the nodes. Default: the
	// implementation's own (quorumlock 10 s with watchdog renewal, redsync
	// 8 s, redislock and raw 10 s).
	TTL time.Duration
	// RetryDelay is how long a waiting Lock of a polling implementation
	// sleeps between tries. Default: the implementation's own — redsync a
	// random 50–250 ms (32 tries per LockContext, then the adapter calls it
	// again), redislock and raw 100 ms (linear). quorumlock waits on pub/sub
	// and ignores it (tune it with quorum.WithRetryInterval in Quorum).
	RetryDelay time.Duration
	// Fencing asks for fencing tokens; only quorumlock has them.
	Fencing bool
	// Tuned selects a peer's documented faster setting where it has one:
	// rueidislock's NoLoopTracking (Redis ≥ 7.0.5). Ignored by the others.
	Tuned bool
	// Quorum are extra options for quorumlock, after
	// quorum.WithFencing(Fencing).
	Quorum []quorum.Option
}

// Maker makes mutexes of one implementation over one set of nodes.
type Maker interface {
	// Kind is the implementation.
	Kind() Impl
	// Name describes the implementation and its tuning, e.g.
	// "redsync(retry 5ms)".
	Name() string
	// Mutex returns the lock called name. Mutexes are safe for concurrent
	// use; each acquisition returns its own Lease.
	Mutex(name string) (Mutex, error)
	// Close releases what the Maker made (not the go-redis clients).
	Close() error
}

// Mutex is one named lock: the chaos matrix's workload.Locker, so the matrix
// runs every implementation as a mode as it is. TryLock tries once; Lock
// waits until the lock is obtained or ctx ends. "Not obtained" errors wrap
// ErrNotObtained (and, for Lock, ctx.Err()).
type Mutex = workload.Locker

// Lease is one held acquisition (workload.Lease): Unlock, the fencing Token
// (0 for implementations without one), and Until, the end of the validity as
// far as the client knows.
type Lease = workload.Lease

// New returns a Maker of cfg.Kind over clients, one go-redis client per
// independent Redis node. The clients stay the caller's.
func New(clients []redis.UniversalClient, cfg Config) (Maker, error) {
	if len(clients) == 0 {
		return nil, errors.New("adapters: no redis clients given")
	}
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("adapters: client %d is nil", i)
		}
	}
	if cfg.TTL < 0 || cfg.RetryDelay < 0 {
		return nil, fmt.Errorf("adapters: negative TTL (%v) or retry delay (%v)", cfg.TTL, cfg.RetryDelay)
	}
	if cfg.Fencing && cfg.Kind != Quorumlock {
		return nil, fmt.Errorf("%w: %s has no fencing tokens", ErrUnsupported, cfg.Kind)
	}
	switch cfg.Kind {
	case Quorumlock:
		return newQuorumlock(clients, cfg)
	case Redsync:
		return newRedsync(clients, cfg), nil
	case Redislock:
		if len(clients) != 1 {
			return nil, fmt.Errorf("%w: redislock locks on one node, got %d", ErrUnsupported, len(clients))
		}
		return newRedislock(clients[0], cfg), nil
	case Raw:
		return newRaw(clients, cfg), nil
	case Rueidislock:
		if len(clients) != 1 {
			return nil, fmt.Errorf("%w: rueidislock spreads its keys over one deployment, not independent masters; got %d", ErrUnsupported, len(clients))
		}
		return newRueidislock(clients[0], cfg)
	case "":
		return nil, errors.New("adapters: Config.Kind is empty; pick one of quorumlock, redsync, redislock, raw, rueidislock")
	}
	return nil, fmt.Errorf("adapters: unknown kind %q; pick one of quorumlock, redsync, redislock, raw, rueidislock", cfg.Kind)
}

// tuning describes a polling implementation's retry delay for Name.
func tuning(k Impl, d time.Duration) string {
	if d == 0 {
		return string(k)
	}
	return fmt.Sprintf("%s(retry %v)", k, d)
}

// notObtained wraps err (if any) with ErrNotObtained and adds ctx's error
// when it ended the wait.
func notObtained(ctx context.Context, err error) error {
	switch {
	case err == nil:
		err = ErrNotObtained
	case !errors.Is(err, ErrNotObtained):
		err = errors.Join(ErrNotObtained, err)
	}
	if cerr := ended(ctx); cerr != nil && !errors.Is(err, cerr) {
		err = errors.Join(err, cerr)
	}
	return err
}

// ended is ctx.Err(), or DeadlineExceeded once ctx's deadline has passed
// even if its timer has not fired yet: with the deadline on the socket
// (ContextTimeoutEnabled) a call can fail with an i/o timeout a moment
// before ctx reports it (a CI failure of TestContract under load).
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, t **time.Timer, d time.Duration) bool {
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	select {
	case <-ctx.Done():
		(*t).Stop()
		return false
	case <-(*t).C:
		return true
	}
}
