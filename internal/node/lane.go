package node

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// lane is one connection of the client's pool that the batcher keeps for a
// call that finds the lane free: in the common case a goroutine that locks
// alone. go-redis checks a connection's health on every checkout from its
// pool (a non-blocking read syscall and a few allocations); a call on the
// lane skips the checkout, which is a visible share of a lone caller's
// cost.
//
// The lane is given back to the pool, and a fresh one checked out (with its
// health check) on a later use, when it was idle longer than laneIdle or
// held longer than laneHold, and at once after a transport or context
// error. So only a caller that comes back within 100 ms uses a connection
// unchecked, the way a pipeline's commands after its first do: a node that
// closed it in that window (a crash) costs that call an error instead of a
// redial. A call that finds the lane closed under it (net.ErrClosed: the
// command was never written) is sent again through the pool. Only a
// standalone *redis.Client with ContextTimeoutEnabled, maintenance
// notifications off (Options) and a pool of at least laneMinPool
// connections has a lane: a Sentinel client closes connections to a
// demoted master under its callers, and a small pool should not lose one
// for good.
type lane struct {
	client *redis.Client // nil: no lane
	conn   *redis.Conn   // nil until first used, and after an error or idleness
	pipe   *redis.Pipeline
	busy   bool
	closed bool
	used   time.Time // when last taken
	since  time.Time // when conn was formed
}

const (
	laneIdle = 100 * time.Millisecond
	// laneHold: go-redis (RESP3) skips its peek for push notifications
	// before each command (a syscall and six allocations) for 5 s after a
	// connection was put back in its pool; a connection held longer pays
	// it on every command. After laneHold the lane goes back to the pool
	// and the next call forms it again from the pool's most recently
	// returned connection (LIFO). Found as a lone Lock+Unlock that rose
	// from 14 to 26 allocations after 5 s of continuous use.
	laneHold    = time.Second
	laneMinPool = 4
)

// newLane returns the lane of client, or a lane that is never taken.
func newLane(client redis.UniversalClient, guarded bool) lane {
	c, ok := client.(*redis.Client)
	if !ok || guarded {
		return lane{}
	}
	o := c.Options()
	if o.Addr == "FailoverClient" || o.PoolSize < laneMinPool {
		return lane{}
	}
	if o.Protocol != 2 && o.MaintNotificationsConfig.IsEnabled() {
		// go-redis (v9.23) writes the client's options, shared with every
		// redis.Conn of it, without the client's lock when a node refuses
		// maintenance notifications: a race with a Conn's dial.
		return lane{}
	}
	return lane{client: c}
}

// take returns the lane's connection for one call, or nil when there is no
// lane or it is in use. Under the batcher's mu; old is a connection to give
// back to the pool once mu is released.
func (l *lane) take() (cn, old *redis.Conn) {
	if l.client == nil || l.busy || l.closed {
		return nil, nil
	}
	now := time.Now()
	if l.conn != nil && (now.Sub(l.used) > laneIdle || now.Sub(l.since) > laneHold) {
		// This call goes through the pool, after old is back in it.
		old, l.conn, l.pipe = l.conn, nil, nil
		return nil, old
	}
	if l.conn == nil {
		// Only from an idle connection of the pool: one the lane dialled
		// itself would be set up by the redis.Conn, which costs go-redis
		// more on every command after. The pool's call dials instead.
		if l.client.PoolStats().IdleConns == 0 {
			return nil, nil
		}
		l.conn, l.since = l.client.Conn(), now
	}
	l.busy, l.used = true, now
	return l.conn, old
}

// pipeline is the lane's pipeline, made once per connection. Only the
// caller holding the lane calls it.
func (l *lane) pipeline(cn *redis.Conn) *redis.Pipeline {
	if l.pipe == nil {
		l.pipe, _ = cn.Pipeline().(*redis.Pipeline)
	}
	return l.pipe
}

// put gives the lane back after a call that returned err; it returns the
// connection to close once mu is released (after an error, or when the
// batcher was closed meanwhile). Under the batcher's mu.
func (l *lane) put(cn *redis.Conn, err error) *redis.Conn {
	l.busy = false
	if (err != nil && !isRedisReply(err)) || l.closed {
		l.conn, l.pipe = nil, nil
		return cn
	}
	return nil
}

// close marks the lane closed and returns its connection to give back.
// Under the batcher's mu; a call on the lane gives it back when it ends.
func (l *lane) close() *redis.Conn {
	l.closed = true
	if l.busy {
		return nil
	}
	cn := l.conn
	l.conn, l.pipe = nil, nil
	return cn
}

// giveBack returns cn (if any) to its pool.
func giveBack(cn *redis.Conn) {
	if cn != nil {
		_ = cn.Close()
	}
}

// unsent is true for an error from a connection that was closed before the
// command was written: sending it again elsewhere cannot run it twice.
func unsent(err error) bool { return err != nil && errors.Is(err, net.ErrClosed) }

// close gives the lane's connection back to the pool; later calls go
// through the pool.
func (b *batcher) close() {
	b.mu.Lock()
	cn := b.lane.close()
	b.mu.Unlock()
	giveBack(cn)
}

// prime, after a PING went through the pool, has the lane take the
// connection just made (set up by the client itself: one set up through a
// redis.Conn costs go-redis more per command) and gives the pool another.
func (b *batcher) prime(ctx context.Context) error {
	if !b.hasLane() {
		return nil
	}
	if _, err := b.do(ctx, "ping"); err != nil {
		return err
	}
	return ping(ctx, b.client)
}

// hasLane is true when the batcher has a lane.
func (b *batcher) hasLane() bool { return b.lane.client != nil }
