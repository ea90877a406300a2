package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Checks are questions a lock call asks the node in the same round trip as
// its script, on the same connection (a pipeline): WAIT for replicas to
// acknowledge the script's write, and the server's identity (INFO server) to
// tell a restarted node. The zero value asks nothing (the plain call).
//
// WAIT counts the writes of the connection it runs on, which is why it
// must follow the script on one connection: on another pooled connection it
// would return at once. On a Cluster client both go to the master of the
// lock's slot.
type Checks struct {
	// Replicas > 0 runs WAIT Replicas timeout after the script. The timeout
	// is WaitTimeout, cut to 3/4 of what is left of the call's deadline (so
	// the answer arrives in time), and never below 1 ms (WAIT 0 would block
	// for ever).
	Replicas    int
	WaitTimeout time.Duration
	// Server asks INFO server after the script: run_id and uptime.
	Server bool
	// Persistence asks CONFIG GET appendonly appendfsync after the script
	// (Checked.Persistence).
	Persistence bool
}

func (c Checks) none() bool { return c.Replicas <= 0 && !c.Server && !c.Persistence }

// Checked is what the checks found.
type Checked struct {
	// Acked is how many replicas acknowledged the write (WAIT's answer);
	// -1 when WAIT was not asked.
	Acked int
	// Timeout is the WAIT timeout that was used.
	Timeout time.Duration
	// Server is the address the pipeline went to: the node's address, or on
	// a Cluster client the master of the lock's slot.
	Server string
	// RunID and Uptime come from INFO server ("" and 0 when not asked).
	RunID  string
	Uptime time.Duration
	// Persistence is what CONFIG GET said (PersistenceUnknown when not
	// asked).
	Persistence Persistence
}

// waitTimeout is the WAIT timeout for a call under ctx.
func waitTimeout(ctx context.Context, d time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) * 3 / 4; left < d {
			d = left
		}
	}
	return max(d, time.Millisecond)
}

// target is the client a checked pipeline runs on: the node's client, or on
// a Cluster client the master that owns key's slot (a keyless WAIT or INFO
// in a cluster pipeline would go to a random shard).
func (n *Node) target(ctx context.Context, key string) (redis.UniversalClient, string, error) {
	switch c := n.client.(type) {
	case *redis.ClusterClient:
		m, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, "", err
		}
		return m, m.Options().Addr, nil
	case *redis.Ring:
		return nil, "", errors.New("quorumlock: WAIT and restart checks need a standalone, Sentinel or Cluster client, not a Ring")
	case *redis.Client:
		return c, c.Options().Addr, nil
	}
	return n.client, n.name, nil
}

// runChecked runs script s and the checks in one pipeline, and returns
// the script's answer. With no checks it is the plain script call.
func (n *Node) runChecked(ctx context.Context, s *redis.Script, keys []string, args []any, chk Checks) (any, Checked, error) {
	if chk.none() {
		r, err := n.eval(ctx, s, keys, args...)
		return r, Checked{Acked: -1}, err
	}
	var res any
	var out Checked
	err := n.call(ctx, func(ctx context.Context) error {
		cl, addr, err := n.target(ctx, keys[0])
		if err != nil {
			return err
		}
		cmd := n.scriptCmd(s, keys, args)
		res, out, err = sendChecked(ctx, cl, cmd, chk)
		if err != nil && n.t.missing(err) {
			// The server does not know the script (a restart, or SCRIPT
			// or FUNCTION FLUSH): make it known and ask again.
			if err := n.t.restore(ctx, cl, s); err != nil {
				return err
			}
			res, out, err = sendChecked(ctx, cl, cmd, chk)
		}
		out.Server = addr
		return err
	})
	if err != nil {
		return nil, Checked{}, err // a wrapped call may still be writing res and out
	}
	return res, out, nil
}

// sendChecked sends the script command cmd and then the checks in one
// pipeline on cl, and reads what the checks found.
func sendChecked(ctx context.Context, cl redis.Cmdable, cmd []any, chk Checks) (any, Checked, error) {
	out := Checked{Acked: -1}
	pipe := cl.Pipeline()
	res := pipe.Do(ctx, cmd...)
	var wait *redis.Cmd
	if chk.Replicas > 0 {
		out.Timeout = waitTimeout(ctx, chk.WaitTimeout)
		wait = pipe.Do(ctx, "wait", chk.Replicas, out.Timeout.Milliseconds())
	}
	var info *redis.StringCmd
	if chk.Server {
		info = pipe.Info(ctx, "server")
	}
	var conf *redis.MapStringStringCmd
	if chk.Persistence {
		conf = persistenceCmd(ctx)
		_ = pipe.Process(ctx, conf)
	}
	_, perr := pipe.Exec(ctx)
	r, err := res.Result()
	if err == nil && perr != nil && !isRedisReply(perr) {
		// A dial that failed on its last try: go-redis v9.17 returns the
		// error from Exec without putting it on the commands.
		err = perr
	}
	if err != nil {
		return nil, out, err
	}
	if wait != nil {
		a, err := wait.Int64()
		if err != nil {
			return nil, out, fmt.Errorf("WAIT: %w", err)
		}
		out.Acked = int(a)
	}
	if info != nil {
		s, err := info.Result()
		if err != nil {
			return nil, out, fmt.Errorf("INFO server: %w", err)
		}
		out.RunID = infoField(s, "run_id")
		up, _ := strconv.ParseInt(infoField(s, "uptime_in_seconds"), 10, 64)
		out.Uptime = time.Duration(up) * time.Second
	}
	if conf != nil {
		// A refused CONFIG is an answer (not persistent), not the call's
		// failure.
		out.Persistence, _ = persistenceOf(conf)
	}
	return r, out, nil
}

// infoField finds one field of INFO output without parsing all of it (this
// runs on every acquire with restart detection).
func infoField(info, name string) string {
	for rest := info; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// intsOf reads a script's answer of len(dst) integers into dst; what
// names the script in the error.
func intsOf(r any, dst []int64, what string) error {
	vs, ok := r.([]any)
	if !ok || len(vs) != len(dst) {
		return fmt.Errorf("quorumlock: %s script answered %v, want %d integers", what, r, len(dst))
	}
	for i, v := range vs {
		if dst[i], ok = v.(int64); !ok {
			return fmt.Errorf("quorumlock: %s script answered %v, want %d integers", what, r, len(dst))
		}
	}
	return nil
}

// acquireAnswer turns the acquire scripts' {granted, fence-or-pttl} answer
// into a vote.
func acquireAnswer(res []int64) (granted bool, remaining time.Duration, fence int64) {
	if res[0] == 1 {
		return true, 0, res[1]
	}
	if res[1] > 0 {
		remaining = time.Duration(res[1]) * time.Millisecond
	}
	return false, remaining, 0
}

func (l *Lock) fenceArg() any { return l.n.fenceArg(l.fencing) }

// AcquireChecked is Acquire with checks in the same round trip.
func (l *Lock) AcquireChecked(ctx context.Context, ttl time.Duration, chk Checks) (granted bool, remaining time.Duration, fence int64, c Checked, err error) {
	if l.queue == nil {
		return l.n.acquireChecked(ctx, acquireScript, l.keys[:], []any{l.owner, ms(ttl), l.attempt, l.fenceArg(), l.val}, chk)
	}
	member, score := l.queue.scriptArgs()
	v, c, err := l.n.acquireReply(ctx, acquireScript, l.keys[:], []any{l.owner, ms(ttl), l.attempt, l.fenceArg(), l.val, member, score}, chk)
	if err != nil {
		// The script may have queued the waiter.
		l.queue.queued.Store(true)
		return false, 0, 0, c, err
	}
	if v[0] == 2 { // refused, and queued
		l.queue.queued.Store(true)
	}
	granted, remaining, fence = acquireAnswer(v[:])
	return granted, remaining, fence, c, nil
}

// acquireChecked runs an acquire script (plain or read-write) with the checks
// and reads its {granted, fence-or-pttl} answer.
func (n *Node) acquireChecked(ctx context.Context, s *redis.Script, keys []string, args []any, chk Checks) (granted bool, remaining time.Duration, fence int64, c Checked, err error) {
	v, c, err := n.acquireReply(ctx, s, keys, args, chk)
	if err != nil {
		return false, 0, 0, c, err
	}
	granted, remaining, fence = acquireAnswer(v[:])
	return granted, remaining, fence, c, nil
}

// acquireReply runs an acquire script with the checks and returns its
// answer's two integers.
func (n *Node) acquireReply(ctx context.Context, s *redis.Script, keys []string, args []any, chk Checks) (v [2]int64, c Checked, err error) {
	r, c, err := n.runChecked(ctx, s, keys, args, chk)
	if err == nil {
		err = intsOf(r, v[:], "acquire")
	}
	return v, c, err
}

// checkedInt runs script s with the checks and reads its integer answer.
func (n *Node) checkedInt(ctx context.Context, s *redis.Script, keys []string, args []any, chk Checks) (int64, Checked, error) {
	r, c, err := n.runChecked(ctx, s, keys, args, chk)
	v, err := scriptInt(s, r, err)
	return v, c, err
}

// ExtendChecked is Extend with checks in the same round trip.
func (l *Lock) ExtendChecked(ctx context.Context, ttl time.Duration, chk Checks) (bool, Checked, error) {
	v, c, err := l.n.checkedInt(ctx, l.extendScript(), l.shareKeys(), []any{l.attempt, ms(ttl)}, chk)
	return v == 1, c, err
}

// FenceChecked is Fence with checks in the same round trip.
func (l *Lock) FenceChecked(ctx context.Context, token int64, chk Checks) (bool, Checked, error) {
	v, c, err := l.n.checkedInt(ctx, fenceScript, l.keys[:], []any{l.attempt, token, l.n.retentionMS()}, chk)
	return v == 1, c, err
}
