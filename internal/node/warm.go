package node

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// warmTimeout bounds one warm-up: a dial, the connection handshake and a
// PING, with the client's own dial timeout inside it.
const warmTimeout = time.Second

// warmer keeps a call's deadline from also being the deadline of every new
// connection.
//
// When a call ends at its deadline (or is cancelled) go-redis drops the
// connection it used: the reply may still be on its way. The next call then
// dials afresh, inside its own short deadline (a RedLock node call gets
// 1/n of the attempt timeout: 50 ms of 250 ms with 5 nodes). On a machine
// slow enough that a dial, the handshake and the command do not fit in that
// deadline, no call completes again: each one times out, drops its new
// connection, and the next one dials again. A warm-up breaks the circle: one PING, under
// warmTimeout instead of the call's deadline, leaves a ready connection in
// the pool for the next attempt.
//
// At most one warm-up runs per node; Node.Close cancels it, waits for it
// and stops further ones.
type warmer struct {
	mu     sync.Mutex
	cancel context.CancelFunc // of the warm-up under way; nil if none
	done   chan struct{}
	closed bool // Node.Close was called: no more warm-ups
	count  int  // warm-ups started, for tests
}

// dropsConn reports whether err is one after which go-redis drops the
// connection for being out of step: the call's context ended, or a network
// read or write timed out.
func dropsConn(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// warm starts a warm-up of the node's client if err dropped a connection
// and none is under way.
func (n *Node) warm(err error) {
	if !dropsConn(err) {
		return
	}
	w := &n.warmer
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil || w.closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), warmTimeout)
	done := make(chan struct{})
	w.cancel, w.done = cancel, done
	w.count++
	go func() {
		defer close(done)
		_ = ping(ctx, n.client)
		cancel()
		w.mu.Lock()
		if w.done == done {
			w.cancel, w.done = nil, nil
		}
		w.mu.Unlock()
	}()
}

// stopWarm cancels the warm-up under way, if any, waits for it (at most
// warmTimeout, or the client's read timeout if it ignores contexts) and
// starts no more.
func (n *Node) stopWarm() {
	w := &n.warmer
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.cancel, w.done, w.closed = nil, nil, true
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// warmUps is how many warm-ups the node started.
func (n *Node) warmUps() int {
	n.warmer.mu.Lock()
	defer n.warmer.mu.Unlock()
	return n.warmer.count
}

// ping reaches every server the client talks to: each master of a cluster,
// each shard of a ring, else the one server.
func ping(ctx context.Context, c redis.UniversalClient) error {
	switch c := c.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return pingBoth(ctx, m) })
	case *redis.Ring:
		return c.ForEachShard(ctx, func(ctx context.Context, s *redis.Client) error { return pingBoth(ctx, s) })
	}
	return pingBoth(ctx, c)
}

// pingBoth sends a PING alone and one in a pipeline: newer go-redis
// versions (9.2x) keep pipelines on a pool of connections of their own
// (Options.PipelinePoolSize), which the fenced fast path, the
// batcher and the checked calls use, so both pools get a ready connection.
func pingBoth(ctx context.Context, c redis.Cmdable) error {
	if err := c.Ping(ctx).Err(); err != nil {
		return err
	}
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() })
	return err
}
