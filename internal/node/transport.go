package node

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// transport carries commands to one node. What a lock kind sends and how
// it reads the reply is the lock kind's; how the command travels is the
// transport's, chosen once by New (newTransport):
//
//   - the carrier: each command on its own through the client's pool
//     (pooled), or through the batcher, which pipelines concurrent calls and
//     keeps a lone caller's connection (the lane);
//   - the dialect: scripts called with EVALSHA (evalsha) or as Redis
//     Functions with FCALL (fcalls);
//   - for a client that ignores context deadlines (guarded: a Sentinel or
//     Cluster client made without ContextTimeoutEnabled, a Ring), every call
//     wrapped so its deadline still holds for the caller.
//
// Another Redis client library would be one more carrier; the checks'
// pipeline, the transactions of Inspect and Queue and the operator's calls
// still use the go-redis client (Node.call). Replies are go-redis' values:
// an integer is an int64, an array a []any, a nil reply the error
// redis.Nil.
type transport interface {
	dialect
	// do sends one command and returns its reply.
	do(ctx context.Context, cmd ...any) (any, error)
	// pipe sends the commands of r in order on one connection (a pipeline)
	// and returns their replies, an error reply as a redis.Error in its
	// slot. err is a transport or context error: then no reply is read.
	pipe(ctx context.Context, r round) (answers, error)
	// run sends a script command made with the dialect's head (verb, name,
	// number of keys, keys, arguments) and, when the node does not know
	// the script (a restart, SCRIPT or FUNCTION FLUSH), makes it known and
	// sends it again.
	run(ctx context.Context, s *redis.Script, cmd []any) (any, error)
	// call runs fn, which uses the client directly, under ctx. A caller
	// must not read what fn writes unless call returned nil: a wrapped fn
	// given up on runs on.
	call(ctx context.Context, fn func(ctx context.Context) error) error
	// bounded reports whether a call ends by its context's deadline on its
	// own, without a cancellation (Lock.BoundByDeadline).
	bounded() bool
	// prime readies what the transport keeps: the lane's connection, the
	// function library (Warm).
	prime(ctx context.Context) error
	// close gives back what the transport holds; later calls go through
	// the client's pool.
	close()
}

// maxRound is the most commands one pipe sends: the fencing fast path's
// SET, INCR and PEXPIRE.
const maxRound = 3

// round is the commands of one pipe, the first ones set and the rest nil.
// An array, passed by value: a caller's commands stay where they are (a
// lone caller's allocations).
type round [maxRound][]any

// size is how many commands r holds.
func (r *round) size() int {
	n := 0
	for n < maxRound && r[n] != nil {
		n++
	}
	return n
}

// answers are a round's replies, in its order.
type answers [maxRound]any

// dialect is how scripts are called on a node.
type dialect interface {
	// head is how a command calls script s: its verb and name, to be
	// followed by the number of keys, the keys and the arguments.
	head(s *redis.Script) (verb, name any)
	// missing reports whether err says the node does not know the script.
	missing(err error) bool
	// recover runs cmd (made with head) on c once the node lacked s.
	recover(ctx context.Context, c carrier, s *redis.Script, cmd []any) (any, error)
	// restore makes s known to cl, the client a checked pipeline runs on.
	restore(ctx context.Context, cl redis.Cmdable, s *redis.Script) error
	// inTx queues body src (made by record) in the transaction pipe: a
	// transaction cannot fall back when the node lacks a script.
	inTx(ctx context.Context, pipe redis.Pipeliner, src string, keys []string, args ...any) *redis.Cmd
	// reloaded runs fn, and once more after making the scripts known when
	// fn failed for want of them (a transaction of inTx commands).
	reloaded(ctx context.Context, fn func() error) error
	// functions reports whether scripts run as Redis Functions.
	functions() bool
	// primeScripts makes the scripts known ahead of the first call, as
	// far as the user may (Warm).
	primeScripts(ctx context.Context)
}

// carrier sends commands as they are: the part of a transport that
// decides the connection and the batching.
type carrier interface {
	do(ctx context.Context, cmd ...any) (any, error)
	pipe(ctx context.Context, r round) (answers, error)
	prime(ctx context.Context) error
	close()
}

// newTransport is the transport New chooses for n's options and client.
func newTransport(n *Node, guard bool) transport {
	var c carrier = &pooled{client: n.client}
	if n.opt.batching {
		c = &batcher{client: n.client, flights: defaultFlights, warm: n.warm, lane: newLane(n.client, guard), onePipe: n.opt.onePipe}
	}
	var d dialect = evalsha{}
	if n.opt.functions {
		d = fcalls{n: n}
	}
	var t transport = line{carrier: c, dialect: d}
	if guard {
		t = guarded{t}
	}
	return t
}

// line is a carrier speaking a dialect: a transport whose calls end by
// their contexts' deadlines.
type line struct {
	carrier
	dialect
}

func (l line) run(ctx context.Context, s *redis.Script, cmd []any) (any, error) {
	v, err := l.carrier.do(ctx, cmd...)
	if err != nil && l.missing(err) {
		return l.recover(ctx, l.carrier, s, cmd)
	}
	return v, err
}

func (l line) call(ctx context.Context, fn func(ctx context.Context) error) error { return fn(ctx) }

func (l line) bounded() bool { return true }

func (l line) prime(ctx context.Context) error {
	if err := l.carrier.prime(ctx); err != nil {
		return err
	}
	l.primeScripts(ctx)
	return nil
}

// guarded is a transport for a client that ignores context deadlines:
// each call runs in a goroutine the caller stops waiting for when its
// deadline passes (the abandoned call ends at the client's own read
// timeout).
type guarded struct{ transport }

func (g guarded) call(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Deadline(); !ok {
		return fn(ctx)
	}
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g guarded) do(ctx context.Context, cmd ...any) (any, error) {
	var v any
	err := g.call(ctx, func(ctx context.Context) (err error) {
		v, err = g.transport.do(ctx, cmd...)
		return err
	})
	if err != nil {
		return nil, err // v is not read: the call may still be running
	}
	return v, nil
}

func (g guarded) pipe(ctx context.Context, r round) (answers, error) {
	var v answers
	err := g.call(ctx, func(ctx context.Context) (err error) {
		v, err = g.transport.pipe(ctx, r)
		return err
	})
	if err != nil {
		return answers{}, err
	}
	return v, nil
}

func (g guarded) run(ctx context.Context, s *redis.Script, cmd []any) (any, error) {
	var v any
	err := g.call(ctx, func(ctx context.Context) (err error) {
		v, err = g.transport.run(ctx, s, cmd)
		return err
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (g guarded) bounded() bool { return false }

// pooled is the carrier that sends each command on its own through the
// client's pool (batching off).
type pooled struct {
	client redis.UniversalClient
	pipes  sync.Pool // *redis.Pipeline, reused by pipeAll
}

func (p *pooled) do(ctx context.Context, cmd ...any) (any, error) {
	return p.client.Do(ctx, cmd...).Result()
}

func (p *pooled) pipe(ctx context.Context, r round) (answers, error) {
	var out answers
	n := r.size()
	err := pipeAll(ctx, &p.pipes, p.client, out[:n], r[0], r[1:n])
	return out, err
}

func (p *pooled) prime(context.Context) error { return nil }

func (p *pooled) close() {}

// evalsha calls scripts by SHA, with the body (EVAL) when the node's
// script cache does not have it.
type evalsha struct{}

var evalshaVerb, evalVerb any = "evalsha", "eval"

func (evalsha) head(s *redis.Script) (verb, name any) { return evalshaVerb, hashArg(s) }

func (evalsha) missing(err error) bool { return strings.HasPrefix(err.Error(), "NOSCRIPT") }

func (evalsha) recover(ctx context.Context, c carrier, s *redis.Script, cmd []any) (any, error) {
	eval := append([]any{evalVerb, scriptNames[s.Hash()].src}, cmd[2:]...)
	return c.do(ctx, eval...)
}

func (evalsha) restore(ctx context.Context, cl redis.Cmdable, s *redis.Script) error {
	return s.Load(ctx, cl).Err()
}

func (evalsha) inTx(ctx context.Context, pipe redis.Pipeliner, src string, keys []string, args ...any) *redis.Cmd {
	return pipe.Eval(ctx, src, keys, args...)
}

func (evalsha) reloaded(_ context.Context, fn func() error) error { return fn() }

func (evalsha) functions() bool { return false }

func (evalsha) primeScripts(context.Context) {}

// fcalls calls scripts as functions of the library (functions.go),
// loading it when the node does not have it.
type fcalls struct{ n *Node }

var fcallVerb any = "fcall"

func (fcalls) head(s *redis.Script) (verb, name any) {
	h, ok := library().head[s.Hash()]
	if !ok {
		panic("quorumlock: no function for script " + s.Hash())
	}
	return fcallVerb, h
}

func (fcalls) missing(err error) bool { return functionMissing(err) }

func (f fcalls) recover(ctx context.Context, c carrier, _ *redis.Script, cmd []any) (any, error) {
	if err := f.n.loadFunctions(ctx); err != nil {
		return nil, err
	}
	return c.do(ctx, cmd...)
}

func (f fcalls) restore(ctx context.Context, _ redis.Cmdable, _ *redis.Script) error {
	return f.n.loadFunctions(ctx)
}

func (fcalls) inTx(ctx context.Context, pipe redis.Pipeliner, src string, keys []string, args ...any) *redis.Cmd {
	return pipe.FCall(ctx, fname(shaOf(src)), keys, args...)
}

func (f fcalls) reloaded(ctx context.Context, fn func() error) error {
	err := fn()
	if functionMissing(err) {
		if err := f.n.loadFunctions(ctx); err != nil {
			return err
		}
		err = fn()
	}
	return err
}

func (fcalls) functions() bool { return true }

// primeScripts loads the library unless the node has it, found by a call
// of its cheapest function (FCALL needs no permission to list libraries).
// Best effort: a user that may not load the library learns it from its
// first attempt, which names the permission.
func (f fcalls) primeScripts(ctx context.Context) {
	n := f.n
	_ = f.reloaded(ctx, func() error {
		return n.client.FCall(ctx, fname(shaOf(serverTimeLua)), []string{n.prefix + "{}"}).Err()
	})
}

// scriptCmd is the command that calls script s on keys with args, in the
// node's dialect.
func (n *Node) scriptCmd(s *redis.Script, keys []string, args []any) []any {
	verb, name := n.t.head(s)
	cmd := make([]any, 0, 3+len(keys)+len(args))
	cmd = append(cmd, verb, name, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return append(cmd, args...)
}

// eval runs script s on keys with args and returns its answer.
func (n *Node) eval(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
	v, err := n.t.run(ctx, s, n.scriptCmd(s, keys, args))
	return v, n.settle(err)
}

// evalInt is eval of a script that answers an integer.
func (n *Node) evalInt(ctx context.Context, s *redis.Script, keys []string, args ...any) (int64, error) {
	r, err := n.eval(ctx, s, keys, args...)
	return scriptInt(s, r, err)
}
