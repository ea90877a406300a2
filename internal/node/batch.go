package node

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher coalesces concurrent calls to one node into pipelines.
//
// Every Lock and Unlock of a RedLock is one command per node. With many
// goroutines, each command as its own write and read on the client and on
// the server runs the machine out of CPU on syscalls. The batcher lets
// at most flights commands or pipelines be in flight on the node; a call
// that finds a free flight and nobody queued goes straight out
// (a lone caller pays nothing), and a call that finds them all busy is
// queued. When a flight returns it takes everything queued and sends it as
// one pipeline. There is no fixed linger: a batch is whatever arrived
// while the connection was busy.
//
// A batcher of a client that drives several nodes (onePipe) keeps at most
// one pipeline in flight: while one is, every call queues, and the flight
// takes the whole queue when it lands. Such a client runs out of CPU
// before its servers do (every Lock is a call to each node), and one
// pipeline per round trip is the fewest flights, syscalls and wake-ups per
// call; calls still go straight out, up to flights of them, while no
// pipeline is in flight, so a lone caller whose Unlock meets the straggler
// of its own Lock does not wait for it. With one node the server is the
// other half of the work, and several pipelines keep it busy, so a
// client of one node keeps its flights.
//
// Deadlines stay per call. A queued caller waits for its own ctx only, and
// leaves when it ends (a frozen node costs it its budget, no more). A
// pipeline runs under the latest deadline of its live calls, so it never
// cuts a caller short; calls whose ctx ended before their batch left are
// not sent (a grant nobody waits for would only hold the lock until its
// TTL). A caller that left must not read its call: only the flight writes
// it, before it signals done (and a caller that left never recycles it).
type batcher struct {
	client  redis.UniversalClient
	pipes   sync.Pool // *redis.Pipeline, reused by pipeAll
	flights int
	warm    func(error)

	onePipe bool // at most one pipeline in flight (a client of several nodes)

	mu    sync.Mutex
	busy  int
	queue []*batchCall
	// piping: a flight is sending the queue (fly). Exact with onePipe,
	// where at most one does and calls queue behind it; not read without.
	piping bool

	lane lane // under mu

	calls  sync.Pool // *batchCall, given back by their callers (newCall)
	timers sync.Pool // *time.Timer, stopped (startTimer)

	pipelined atomic.Int64 // calls sent in a pipeline of two or more, for tests
}

type batchCall struct {
	ctx  context.Context
	args []any
	val  any
	err  error
	// done gets one value when val and err are written (buffered: the
	// flight never blocks on a caller that left).
	done chan struct{}
	// more: further commands sent right after args in the same pipeline
	// (doAll), their replies in vals.
	more [][]any
	vals []any
}

// newCall is a queued call, one the batcher's callers gave back if it
// has one: under load nearly every call queues, and a call and a channel
// each was a measurable share of the client's CPU (with the timer, below).
// The pools are the batcher's own, not the package's: a channel or a timer
// made in one synctest bubble (the simulation runs each cluster in one)
// must not be used in another.
func (b *batcher) newCall(ctx context.Context, args []any) *batchCall {
	c, _ := b.calls.Get().(*batchCall)
	if c == nil {
		c = &batchCall{done: make(chan struct{}, 1)}
	}
	c.ctx, c.args = ctx, args
	return c
}

// recycle gives c back to b. Only its caller may, and only after it
// received from done: then the flight no longer touches c.
func (b *batcher) recycle(c *batchCall) {
	clear(c.more)
	clear(c.vals)
	*c = batchCall{done: c.done, more: c.more[:0], vals: c.vals[:0]}
	b.calls.Put(c)
}

// finish tells c's caller that val and err are written.
func (c *batchCall) finish() { c.done <- struct{}{} }

// startTimer is a timer with which a queued call watches its deadline,
// one a call before it stopped if b has one. Since Go 1.23 a stopped timer
// delivers nothing stale after Reset, so a kept one serves as a new one
// would.
func (b *batcher) startTimer(d time.Duration) *time.Timer {
	if t, _ := b.timers.Get().(*time.Timer); t != nil {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func (b *batcher) stopTimer(t *time.Timer) {
	t.Stop()
	b.timers.Put(t)
}

// defaultFlights is how many commands or pipelines may be in flight on one
// node at once: enough that a slow reply does not stall the others and that
// a few concurrent callers each go out alone, few enough that many share
// pipelines. With fewer, a handful of goroutines on one node fall behind
// the unbatched path (each queued call waits for a flight to land, then a
// round trip); with 4 they keep up, and many goroutines still gain about
// as much from batching as with fewer flights.
const defaultFlights = 4

// do sends one command (go-redis Do) and returns its reply.
func (b *batcher) do(ctx context.Context, args ...any) (any, error) {
	b.mu.Lock()
	if b.free() {
		b.busy++
		cn, old := b.lane.take()
		b.mu.Unlock()
		giveBack(old)
		var v any
		var err, laneErr error
		if cn != nil {
			v, err = cn.Do(ctx, args...).Result()
			laneErr = err
		}
		if cn == nil || unsent(laneErr) {
			v, err = b.client.Do(ctx, args...).Result()
		}
		b.land(cn, laneErr)
		return v, err
	}
	c := b.newCall(ctx, args)
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	// ctx may carry a deadline that its Done does not close at (a Lock is
	// DeadlineBound: the multilock core passes such a context), so a queued
	// call watches the deadline itself: it must not wait past it for a
	// flight to land.
	var expired <-chan time.Time
	if d, ok := ctx.Deadline(); ok {
		t := b.startTimer(time.Until(d))
		defer b.stopTimer(t)
		expired = t.C
	}
	select {
	case <-c.done:
		v, err := c.val, c.err
		b.recycle(c)
		return v, err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-expired:
		return nil, context.DeadlineExceeded
	}
}

// pipe is doAll of a round (transport).
func (b *batcher) pipe(ctx context.Context, r round) (answers, error) {
	var out answers
	n := r.size()
	err := b.doAll(ctx, out[:n], r[0], r[1:n])
	return out, err
}

// doAll sends first and then more as consecutive commands of one pipeline
// on one connection, so the node runs them in this order, and puts their
// replies in dst (len 1+len(more); an error reply as a redis.Error in its
// slot). err is a transport or context error: then no reply can be
// trusted.
func (b *batcher) doAll(ctx context.Context, dst []any, first []any, more [][]any) error {
	b.mu.Lock()
	if b.free() {
		b.busy++
		cn, old := b.lane.take()
		b.mu.Unlock()
		giveBack(old)
		var err, laneErr error
		if cn != nil {
			err = pipeOn(ctx, b.lane.pipeline(cn), dst, first, more)
			laneErr = err
		}
		if cn == nil || unsent(laneErr) {
			err = pipeAll(ctx, &b.pipes, b.client, dst, first, more)
		}
		b.land(cn, laneErr)
		return err
	}
	// more is copied: the caller's may stay on its stack.
	c := b.newCall(ctx, first)
	c.more = append(c.more, more...)
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case <-c.done:
		err := c.err
		if err != nil && !isRedisReply(err) {
			b.recycle(c)
			return err
		}
		dst[0] = replyOf(c.val, err)
		copy(dst[1:], c.vals)
		b.recycle(c)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pipeAll is doAll's round trip through the client's pool. The replies go
// to dst (len 1+len(more)), which the caller may keep on its stack, and
// the pipeline comes from pool (the carrier's, of *redis.Pipeline): a lone
// caller's allocations.
func pipeAll(ctx context.Context, pool *sync.Pool, client redis.UniversalClient, dst []any, first []any, more [][]any) error {
	pipe, _ := pool.Get().(*redis.Pipeline)
	if pipe == nil {
		p, ok := client.Pipeline().(*redis.Pipeline)
		if !ok {
			// Another client's pipeline: used once, not pooled.
			p := client.Pipeline()
			cmds := []redis.Cmder{redis.NewCmd(ctx, first...)}
			for _, a := range more {
				cmds = append(cmds, redis.NewCmd(ctx, a...))
			}
			_ = p.BatchProcess(ctx, cmds...)
			_, err := p.Exec(ctx)
			return replies(dst, cmds, err)
		}
		pipe = p
	}
	err := pipeOn(ctx, pipe, dst, first, more)
	pool.Put(pipe)
	return err
}

// pipeOn is pipeAll's round trip on pipe (pooled, or the lane's). A
// Pipeline is reusable: Exec takes its commands out. Called on the
// concrete type, cmds stays on the stack.
func pipeOn(ctx context.Context, pipe *redis.Pipeline, dst []any, first []any, more [][]any) error {
	var arr [4]redis.Cmder
	cmds := append(arr[:0], redis.NewCmd(ctx, first...))
	for _, a := range more {
		cmds = append(cmds, redis.NewCmd(ctx, a...))
	}
	_ = pipe.BatchProcess(ctx, cmds...) // never fails: it appends
	_, err := pipe.Exec(ctx)
	return replies(dst, cmds, err)
}

// replies puts the replies of cmds in dst, unless err (a pipeline's Exec
// error) is a transport or context error.
func replies(dst []any, cmds []redis.Cmder, err error) error {
	if err != nil && !isRedisReply(err) {
		return err
	}
	for i, c := range cmds {
		c := c.(*redis.Cmd)
		dst[i] = replyOf(c.Val(), c.Err())
	}
	return nil
}

// replyOf is one command's reply for doAll: its value, or its error reply
// (nil for a nil reply).
func replyOf(v any, err error) any {
	if err != nil && err != redis.Nil {
		return err
	}
	return v
}

// land ends a flight that ran on cn (the lane's connection, or nil for the
// pool's) and returned err; if calls are queued it sends them in its place.
func (b *batcher) land(cn *redis.Conn, err error) {
	b.mu.Lock()
	var drop *redis.Conn
	if cn != nil {
		drop = b.lane.put(cn, err)
	}
	if len(b.queue) == 0 || b.onePipe && b.piping {
		// Nothing to send, or the pipeline in flight takes it.
		b.busy--
		b.mu.Unlock()
		giveBack(drop)
		return
	}
	batch := b.queue
	b.queue = nil
	b.piping = true
	b.mu.Unlock()
	giveBack(drop)
	go b.fly(batch)
}

// free is true when a call may go straight out (under mu): a flight is
// free, nobody is queued, and with onePipe no pipeline is in flight.
func (b *batcher) free() bool {
	return b.busy < b.flights && len(b.queue) == 0 && !(b.onePipe && b.piping)
}

// fly sends batch as one pipeline, then whatever queued meanwhile, until
// the queue is empty.
func (b *batcher) fly(batch []*batchCall) {
	for {
		b.send(batch)
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.busy--
			b.piping = false
			b.mu.Unlock()
			return
		}
		batch = b.queue
		b.queue = nil
		b.mu.Unlock()
	}
}

func (b *batcher) send(batch []*batchCall) {
	live := batch[:0:0]
	var last time.Time
	bounded := true
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			c.finish()
			continue
		}
		live = append(live, c)
		if d, ok := c.ctx.Deadline(); ok {
			if d.After(last) {
				last = d
			}
		} else {
			bounded = false
		}
	}
	if len(live) == 0 {
		return
	}
	ctx := context.Background()
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, last)
		defer cancel()
	}
	if len(live) > 1 {
		b.pipelined.Add(int64(len(live)))
	}
	pipe := b.client.Pipeline()
	cmds := make([]*redis.Cmd, len(live))
	var more [][]*redis.Cmd // doAll's further commands, per live call
	for i, c := range live {
		cmds[i] = pipe.Do(ctx, c.args...)
		if len(c.more) > 0 {
			if more == nil {
				more = make([][]*redis.Cmd, len(live))
			}
			for _, a := range c.more {
				more[i] = append(more[i], pipe.Do(ctx, a...))
			}
		}
	}
	_, perr := pipe.Exec(ctx)
	for i, c := range live {
		c.val, c.err = cmds[i].Val(), cmds[i].Err()
		if c.err == nil && perr != nil && !isRedisReply(perr) {
			c.err = perr
		}
		if more != nil {
			for _, m := range more[i] {
				c.vals = append(c.vals, replyOf(m.Val(), m.Err()))
			}
		}
		c.finish()
	}
	if perr != nil && !isRedisReply(perr) && b.warm != nil {
		b.warm(perr)
	}
}

// isRedisReply is true for an error the server answered (a script's error,
// NOSCRIPT, a nil reply), false for a transport or context error.
func isRedisReply(err error) bool {
	if err == redis.Nil {
		return true
	}
	re, ok := err.(redis.Error)
	// A refused handshake (WRONGPASS, NOAUTH to HELLO or AUTH) is a server
	// error too, but go-redis returns it from Exec and puts it on none of
	// the commands: it is the connection's error.
	return ok && !authRefused(re)
}

// authRefused reports whether err is the server's refusal of the client's
// credentials.
func authRefused(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "NOAUTH")
}
