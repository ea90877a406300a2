package workload

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/guard"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// Guard is a fenced store outside the lock, written by the holders of the
// guarded workload with their token (the project's guard.Redis on a node
// of its own: RedisGuard).
type Guard interface {
	// Set writes value with token. It reports whether the guard accepted
	// the write and, when it refused it, the last token it had accepted.
	// An error means the outcome is not known.
	Set(ctx context.Context, token, value int64) (accepted bool, last int64, err error)
}

// GuardKey is the key the guarded workload writes through its Guard.
const GuardKey = "guarded"

// RedisGuard is a Guard over guard.Redis on c, writing key.
func RedisGuard(c redis.Scripter, key string) Guard {
	return redisGuard{g: guard.NewRedis(c), key: key}
}

type redisGuard struct {
	g   *guard.Redis
	key string
}

func (r redisGuard) Set(ctx context.Context, token, value int64) (bool, int64, error) {
	err := r.g.Set(ctx, r.key, token, value, 0)
	var stale *guard.StaleError
	if errors.As(err, &stale) {
		return false, stale.Last, nil
	}
	return err == nil, 0, err
}

// guardWrite writes v through the guard with the lease's token and
// records it under lease id.
func (r *runner) guardWrite(ctx context.Context, id history.OpID, token, v int64) {
	call := r.rec.Invoke(history.Op{Worker: r.w.ID, Kind: history.GuardWrite, Lease: id, Token: uint64(max(token, 0)), Value: v})
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ReleaseTimeout)
	defer cancel()
	ok, last, err := r.cfg.Guard.Set(wctx, token, v)
	switch {
	case err != nil:
		call.Unknown(err)
	case ok:
		call.Ok()
	default:
		call.Refused(uint64(max(last, 0)), &guard.StaleError{Key: GuardKey, Token: token, Last: last})
	}
}
