package node

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lock returns the handle of one acquisition attempt of lock name by owner
// (which must not contain a NUL byte) on this node. attempt must be unique per attempt: the scripts count hold
// shares per attempt, so a late or repeated message of one attempt never
// touches another's share. fencing makes grants count the fencing counter.
func (n *Node) Lock(name, owner, attempt string, fencing bool) *Lock {
	return n.LockKeys(n.Keys(name), owner, attempt, fencing)
}

// LockKeys is Lock with the lock's keys given (k must be n.Keys(name)): a
// caller that locks one name again and again computes them once.
func (n *Node) LockKeys(k Keys, owner, attempt string, fencing bool) *Lock {
	l := &Lock{n: n, keys: [2]string{k.Lock, k.Fence}, channel: k.Channel, owner: owner, attempt: attempt, val: FastValue(owner, attempt), fencing: fencing, fenced: k.fenced,
		lockArg: k.lockArg}
	if l.lockArg == nil { // Keys made by hand
		l.lockArg = k.Lock
	}
	l.valArg = l.val
	verb, script := n.t.head(releaseScript)
	l.releaseCmd = [...]any{verb, script, 1, l.lockArg, l.valArg}
	return l
}

// FastValue is the string a fast-path acquisition of attempt by owner
// writes (lock_lib.lua reads it back). When attempt is owner + "." + n, n
// non-empty and without a '.', it is the attempt id alone: the compact
// form, which names the owner too. quorum makes its owners and attempts
// that way, so the value stays within Redis's 44-byte embedded strings and
// a held lock costs about what a bare SET NX lock costs. Otherwise it is
// owner + "\x00" + attempt.
func FastValue(owner, attempt string) string {
	if n, ok := strings.CutPrefix(attempt, owner+"."); ok && owner != "" && n != "" &&
		!strings.ContainsAny(n, ".\x00") && !strings.Contains(owner, "\x00") {
		return attempt
	}
	return owner + "\x00" + attempt
}

// SplitFastValue is FastValue's inverse: the owner and attempt of a
// fast-path string, ok false for a string in neither form.
func SplitFastValue(v string) (owner, attempt string, ok bool) {
	if o, a, found := strings.Cut(v, "\x00"); found {
		return o, a, true
	}
	if i := strings.LastIndexByte(v, '.'); i > 0 && i < len(v)-1 {
		return v[:i], v, true
	}
	return "", "", false
}

// Lock is one attempt's handle on one node. It is what the multilock core
// drives (Acquire, Extend, Release, Fence).
type Lock struct {
	n       *Node
	keys    [2]string // lock, fencing counter
	channel string
	owner   string
	attempt string
	val     string // FastValue(owner, attempt): the fast path's string form
	// keys[0] and val as command arguments (Keys.lockArg): the set and
	// the release of a lone caller share them instead of each putting the
	// strings in interfaces again.
	lockArg, valArg any
	// fastCmd, releaseCmd: the fast path's commands (fastArgs) and a
	// Mutex's Release, as command arguments kept with the Lock (a lone
	// caller's allocations). Each is written once, before its first use,
	// and only read after: a call given up on may still be in a pipeline
	// that reads it. releaseCmd is written by LockKeys.
	fastCmd    [11]any
	releaseCmd [5]any
	fencing    bool
	fenced     *fencedKeys // from ReusedKeys, else nil
	// held: the caller expects the lock to be held (ExpectHeld), so
	// Acquire skips the SET NX that would fail.
	held bool
	// leaderKey, leaderChan: an election's (Elect); empty for a
	// plain lock.
	leaderKey, leaderChan string
	// queue: the waiter's member and score in the lock's line (Queue);
	// nil: a refusal does not queue.
	queue *LinePlace
}

// LinePlace is a waiting Lock's place in a lock's line of waiters on a node:
// a refused acquire queues it (acquire.lua: unless the holder is of the
// waiter's own client and nobody else waits), and a release wakes the head
// of the line alone, on its client's wait channel (Node.WaitChannel),
// instead of every waiting client. Score orders the line: the same on every
// node (the time the waiter's Lock started), so every node wakes the same
// waiter. One place serves a Lock call's attempts on every node.
type LinePlace struct {
	channel string
	seq     uint64
	score   int64
	// args: the member and score as the script's arguments, made at the
	// first refusal (a Lock granted at once never needs them): the member
	// is the wait channel and the waiter's number, so a release finds
	// where to publish in the line itself.
	args        sync.Once
	member, pos any
	// queued: a refusal put the waiter in a line, so the release of a
	// lock it then wins takes it out (a waiter woken was taken out by the
	// release that woke it; one that won on a retry was not).
	queued atomic.Bool
}

// NewLinePlace makes the place of waiter seq (NextWaiter) woken on channel
// (its client's Node.WaitChannel) whose line position is score.
func NewLinePlace(channel string, seq uint64, score int64) *LinePlace {
	p := &LinePlace{}
	p.Set(channel, seq, score)
	return p
}

// Set makes p, not used yet, the place NewLinePlace makes.
func (p *LinePlace) Set(channel string, seq uint64, score int64) {
	p.channel, p.seq, p.score = channel, seq, score
}

// scriptArgs is the member and score as the acquire script takes them.
func (p *LinePlace) scriptArgs() (member, score any) {
	p.args.Do(func() {
		var buf [96]byte
		b := append(append(buf[:0], p.channel...), ':')
		p.member = string(strconv.AppendUint(b, p.seq, 10))
		p.pos = p.score
	})
	return p.member, p.pos
}

// Queued reports whether a refusal put the waiter in a line.
func (p *LinePlace) Queued() bool { return p.queued.Load() }

// WaitChannel is the channel of this node on which a release wakes the
// waiters of client (an id of the client's own), whatever the lock: one
// channel per client, which it keeps subscribed while it lives (Stand),
// the waiter's number as the message.
func (n *Node) WaitChannel(client string) string { return n.prefix + "wait:" + client }

// LeaveLine takes the waiter p out of the line of the lock with keys k (a
// waiter that gave up), so a release does not spend its wake-up on it.
func (n *Node) LeaveLine(ctx context.Context, k Keys, p *LinePlace) error {
	member, _ := p.scriptArgs()
	_, err := n.t.do(ctx, "zrem", k.Lock+":waiters", member)
	return n.settle(err)
}

// Queue makes a refusal of this attempt put w in the lock's line of
// waiters (see LinePlace); it returns l. Call it before Acquire.
func (l *Lock) Queue(w *LinePlace) *Lock {
	l.queue = w
	return l
}

// ExpectHeld tells Acquire that the lock is probably held (the caller
// holds it through another acquisition right now), so it runs the acquire
// script at once instead of first trying the fast path's SET NX, which
// would fail and cost a round trip. Only a hint: the script grants a free
// lock as well. It returns l; call it before Acquire.
func (l *Lock) ExpectHeld() *Lock {
	l.held = true
	return l
}

func (l *Lock) String() string { return l.n.name }

// BoundByDeadline reports whether this lock's calls end by their context's
// deadline without a cancellation (multilock.DeadlineBound): true unless
// the go-redis client ignores context deadlines, in which case every call
// is wrapped to wait on the context instead (guarded). The multilock core
// then hands its calls a deadline without a timer, one timer and context
// fewer per phase. A call queued in the batcher arms its own timer.
func (l *Lock) BoundByDeadline() bool { return l.n.t.bounded() }

func ms(d time.Duration) int64 {
	if d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}

// Acquire asks this node once for the attempt's share.
//
// Without fencing it first sends one plain command, SET key FastValue(owner,
// attempt) NX PX ttl: on a free lock that is the whole acquisition, with no script to
// run (the lock is then a string, which every script reads as the hash it
// stands for; see lock_lib.lua). When the key exists, the acquire script
// decides: this attempt's own earlier SET (a retried call), the same owner
// (reentrancy), or another holder (refused, with its remaining TTL). With
// fencing the fast path is three plain commands in one pipeline (see
// acquireFenced), and the script decides whenever they do not grant.
func (l *Lock) Acquire(ctx context.Context, ttl time.Duration) (granted bool, remaining time.Duration, fence int64, err error) {
	if !l.held {
		if l.fencing {
			if granted, fence, done, err := l.acquireFenced(ctx, ttl); done {
				return granted, 0, fence, err
			}
		} else if granted, done, err := l.acquireFast(ctx, ttl); done {
			return granted, 0, 0, err
		}
	}
	granted, remaining, fence, _, err = l.AcquireChecked(ctx, ttl, Checks{})
	return granted, remaining, fence, err
}

// acquireFast is Acquire's one-command path; done is false when the acquire
// script must decide. It answers only a grant: SET NX replies OK or nothing
// (nil is no error for go-redis' BoolCmd, so the hot path never walks its
// error classification).
func (l *Lock) acquireFast(ctx context.Context, ttl time.Duration) (granted, done bool, err error) {
	set, err := l.setNX(ctx, ttl)
	if err != nil {
		return false, true, err
	}
	return set, set, nil
}

// setNX sends the fast path's SET key value NX PX ttl.
func (l *Lock) setNX(ctx context.Context, ttl time.Duration) (bool, error) {
	// Never PX 0 (SET would keep the key forever): at least 1 ms, as the
	// scripts' ms() rounds.
	var px any
	if l.fenced != nil {
		px = l.fenced.ttlArg(ttl)
	} else {
		px = ms(ttl)
	}
	v, err := l.n.t.do(ctx, l.fastArgs(px, nil)[:6]...)
	if err == redis.Nil {
		return false, nil
	}
	return err == nil && v == "OK", l.n.settle(err)
}

// fastArgs is the fast path's commands as arguments: SET lock value PX px
// NX, then INCR fence and PEXPIRE fence retention (fence is nil without
// fencing: only the SET is sent). It is the Lock's fastCmd, filled by the
// first call, or a new array when px is not that call's: fastCmd is never
// rewritten, since a call given up on may still be in a pipeline that
// reads it.
func (l *Lock) fastArgs(px, fence any) []any {
	switch {
	case l.fastCmd[0] == nil:
		l.fastCmd = [...]any{"set", l.lockArg, l.valArg, "px", px, "nx", "incr", fence, "pexpire", fence, l.n.fenceOnArg}
	case l.fastCmd[4] != px:
		return []any{"set", l.lockArg, l.valArg, "px", px, "nx", "incr", fence, "pexpire", fence, l.n.fenceOnArg}
	}
	return l.fastCmd[:]
}

// fenceSeeded: a fencing counter below it was not seeded from the node's
// clock (acquire_lib.lua, which has the same constant).
const fenceSeeded = 1 << 32

// acquireFenced is the fast path with fencing, one round trip of two or
// three plain commands on one connection, in this order: SET lock NX PX
// ttl; INCR counter; and, when due, PEXPIRE counter retention. A grant
// whose counter was seeded (INCR ≥ fenceSeeded) is answered at once: the
// fence is the INCR's reply. A grant on a counter INCR made from nothing (a
// name's first use on the node, or its first after the retention) takes
// one more round trip, fence_seed.lua, which seeds the counter from the
// node's clock, with the retention, where the grant still stands. When SET
// refuses (held, reentrant, a retried call) the acquire script decides.
//
// Why this is as safe as the script, which counts the counter in the same
// atomic step as the grant (multilock's token is the max over a quorum,
// and its write-back is skipped when a quorum reported that max itself,
// FenceKeeper):
//   - The counter only grows, as in the script: INCR, set-if-greater write-backs,
//     and seeding from the clock (only below fenceSeeded) never lower it;
//     an expired counter restarts from the clock, as in the script.
//   - A grant's INCR runs on the node after its SET (one connection runs
//     its commands in order) and before that grant ends: it could end
//     first only by expiring, which needs the whole ttl to pass inside this
//     one round trip, and then the grant gives no validity (drift.Validity
//     of ttl − elapsed). So while holder A's grant stands on a node, the
//     counter there is ≥ the value A got, and any later holder B, granted
//     there only after A's grant ended, INCRs after that and gets more.
//     That is the step the atomic script gave; the quorum argument above it
//     is unchanged.
//   - INCR also runs when SET refuses: a counter counted up by an attempt
//     that was not granted is larger, never smaller, which costs nothing.
//
// The retention decides only when a counter of a name no longer used goes
// away (and then restarts from the clock: docs/defaults.md). INCR keeps a
// counter's expiry, so the PEXPIRE is sent only when due: the first time
// from these Keys, and then at most once per retention/rearmFraction (a
// hundredth). Each PEXPIRE that answered 1, sent at time r, made the
// counter live until at least r + retention; an attempt at t < r +
// retention/100 that skips it leaves the counter living at least 99% of
// the retention after t. A counter lost meanwhile (a restart without
// persistence, FLUSHALL) is made again by INCR without an expiry and below
// fenceSeeded, so fence_seed.lua seeds it and gives it the retention.
func (l *Lock) acquireFenced(ctx context.Context, ttl time.Duration) (granted bool, fence int64, done bool, err error) {
	f := l.fenced
	if f == nil {
		f = &fencedKeys{fence: l.keys[1]}
	}
	now := monotonic()
	rearm := f.due(now, l.n.rearmEvery)
	// One array for the commands' arguments (fastArgs): slices of it, no
	// allocation of their own (a lone caller's allocations).
	args := l.fastArgs(f.ttlArg(ttl), f.fence)
	r := round{args[0:6:6], args[6:8:8]}
	if rearm {
		r[2] = args[8:11:11]
	}
	vals, err := l.n.t.pipe(ctx, r)
	if err == nil {
		err = fencedReplies(&vals, r.size())
	}
	if err = l.n.settle(err); err != nil {
		return false, 0, true, err
	}
	if rearm && vals[2] == int64(1) {
		f.rearmedAt(now)
	}
	v := vals[1].(int64)
	if vals[0] != "OK" {
		return false, 0, false, nil
	}
	if v >= fenceSeeded {
		return true, v, true, nil
	}
	v, err = l.n.evalInt(ctx, fenceSeedScript, l.keys[:], l.attempt, "", "", l.n.retentionMS())
	return v > 0 && err == nil, v, true, err
}

// fencedReplies checks the shape of acquireFenced's n replies.
func fencedReplies(vals *answers, n int) error {
	for _, v := range vals[:n] {
		if e, ok := v.(error); ok {
			return e // an error reply (an ACL refusal: Node.settle names it)
		}
	}
	if _, ok := vals[1].(int64); !ok {
		return fmt.Errorf("quorumlock: fencing counter INCR answered %T, want an integer", vals[1])
	}
	return nil
}

// scriptInt reads script s's answer r (err: its call's error) as an integer.
func scriptInt(s *redis.Script, r any, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	v, ok := r.(int64)
	if !ok {
		return 0, fmt.Errorf("quorumlock: script %s answered %T, want an integer", s.Hash()[:8], r)
	}
	return v, nil
}

// Release gives back this attempt's share; true when it held one. When
// the lock became free it tells waiters (unlock channel).
func (l *Lock) Release(ctx context.Context) (bool, error) { return l.release(ctx, false) }

// Rollback is Release for an attempt that never held the lock (it failed
// the quorum): it tells no waiter, since nothing they wait for happened.
func (l *Lock) Rollback(ctx context.Context) (bool, error) { return l.release(ctx, true) }

// The release scripts' tell argument (release.lua), as interface values
// made once (a string variable put in an []any costs an allocation per
// call). A plain lock's release leaves it out unless it is tellNobody.
var tellWaiters, tellNobody any = "1", "0"

func (l *Lock) release(ctx context.Context, rollback bool) (bool, error) {
	if l.leaderKey != "" {
		tell := tellWaiters
		if rollback {
			tell = tellNobody
		}
		return l.n.released(l.n.evalInt(ctx, electReleaseScript, l.shareKeys(), l.valArg, tell, l.leaderChan))
	}
	// The command is the Lock's (scriptCmd would box the key and copy
	// the arguments again: a lone caller's allocations).
	cmd := l.releaseCmd[:]
	switch {
	case rollback:
		cmd = []any{cmd[0], cmd[1], 1, l.lockArg, l.valArg, tellNobody}
	case l.queue != nil && l.queue.Queued():
		// A waiter that won without being woken (a retry) is still in
		// the line where it queued: its release takes it out before
		// waking the head, so that wake-up is not spent on it.
		member, _ := l.queue.scriptArgs()
		cmd = []any{cmd[0], cmd[1], 1, l.lockArg, l.valArg, tellWaiters, member}
	}
	r, err := l.n.t.run(ctx, releaseScript, cmd)
	v, err := scriptInt(releaseScript, r, l.n.settle(err))
	return l.n.released(v, err)
}

// extendScript is the script Extend runs.
func (l *Lock) extendScript() *redis.Script {
	if l.leaderKey != "" {
		return electExtendScript
	}
	return extendScript
}

// Extend re-arms the TTL where this attempt holds a share; never acquires.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) (bool, error) {
	v, err := l.n.evalInt(ctx, l.extendScript(), l.shareKeys(), l.attempt, ms(ttl))
	return v == 1, err
}

// Fence writes token back set-if-greater where this attempt's grant stands.
func (l *Lock) Fence(ctx context.Context, token int64) (bool, error) {
	v, err := l.n.evalInt(ctx, fenceScript, l.keys[:], l.attempt, token, l.n.retentionMS())
	return v == 1, err
}
