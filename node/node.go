package node

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/lockkeys"
)

var (
	//go:embed acquire.lua
	acquireLua string
	//go:embed release.lua
	releaseLua string
	//go:embed extend.lua
	extendLua string
	//go:embed fence.lua
	fenceLua string
	//go:embed force_release.lua
	forceReleaseLua string
	//go:embed force_finish.lua
	forceFinishLua string
	//go:embed lock_lib.lua
	lockLibLua string
	//go:embed acquire_lib.lua
	acquireLibLua string

	// Scripts run by SHA (EVALSHA) with a fallback to the body (EVAL) when
	// the server's script cache does not have them.
	acquireScript      = redis.NewScript(lockLibLua + acquireLibLua + acquireLua)
	releaseScript      = redis.NewScript(releaseLua)
	extendScript       = redis.NewScript(promoted(extendLua))
	fenceScript        = redis.NewScript(promoted(fenceLua))
	forceReleaseScript = redis.NewScript(forceReleaseLua)
	forceFinishScript  = redis.NewScript(promoted(forceFinishLua))
)

// promoted is a script that first turns a fast-path string lock into its hash
// form (lock_lib.lua), for scripts that read the lock only as a hash.
func promoted(body string) string { return lockLibLua + "promote()\n" + body }

// DefaultPrefix starts every key and channel this package uses.
const DefaultPrefix = lockkeys.DefaultPrefix

// Node is one Redis deployment taking part in a quorum: a standalone server,
// a Sentinel-managed group or a Cluster, behind the user's go-redis client.
// It is safe for concurrent use. Close stops its pub/sub listener; the client
// stays the caller's.
type Node struct {
	client  redis.UniversalClient
	name    string
	prefix  string
	guarded bool

	subMu sync.Mutex
	sub   *subscriber

	warmer warmer // warm.go
}

// Option configures a Node.
type Option func(*Node)

// WithName sets the node's name in errors and reports; default the client's
// address.
func WithName(name string) Option { return func(n *Node) { n.name = name } }

// WithPrefix sets the key prefix; default DefaultPrefix ("quorumlock:").
func WithPrefix(p string) Option { return func(n *Node) { n.prefix = p } }

// New wraps a go-redis client.
//
// Per-call deadlines are what keep a frozen node from stalling a quorum. A
// go-redis client honours context deadlines only with ContextTimeoutEnabled;
// when the client says it is off (or cannot say), every call is wrapped so the
// deadline still holds for the caller (the abandoned call ends at the
// client's own read timeout). Prefer ContextTimeoutEnabled: true and
// MaxRetries: -1 (see Options).
func New(client redis.UniversalClient, opts ...Option) (*Node, error) {
	if client == nil {
		return nil, errors.New("node: nil redis client")
	}
	n := &Node{client: client, prefix: DefaultPrefix}
	n.name, n.guarded = describe(client)
	for _, o := range opts {
		o(n)
	}
	if n.name == "" {
		n.name = fmt.Sprintf("%p", client)
	}
	return n, nil
}

// describe returns the client's address and whether calls need wrapping.
func describe(c redis.UniversalClient) (addr string, guarded bool) {
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		if o.Addr == "FailoverClient" {
			// A Sentinel-managed group (redis.NewFailoverClient): its options
			// keep neither the master name nor the sentinels, and every such
			// client says "FailoverClient", so name it by identity.
			return fmt.Sprintf("sentinel(%p)", c), !o.ContextTimeoutEnabled
		}
		return o.Addr, !o.ContextTimeoutEnabled
	case *redis.ClusterClient:
		o := c.Options()
		return "cluster[" + strings.Join(o.Addrs, ",") + "]", !o.ContextTimeoutEnabled
	case *redis.Ring:
		return "ring", true
	}
	return "", true
}

// Options returns go-redis options for addr with the settings a lock needs:
// context deadlines honoured and no hidden retries (the lock retries at its
// own level, within the caller's budget).
func Options(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           time.Second,
	}
}

// Name is the node's name (its address unless set).
func (n *Node) Name() string { return n.name }

// String is the node's name.
func (n *Node) String() string { return n.name }

// Client is the go-redis client the node was built on.
func (n *Node) Client() redis.UniversalClient { return n.client }

// Keys are the Redis names of one lock. All share the hash tag {name}, so a
// Cluster keeps them in one slot.
type Keys struct {
	Lock    string // hash {owner -> hold count}, or the string "owner\x00attempt" of a single fast-path holder
	Fence   string // fencing counter
	Channel string // unlock notifications
	Forced  string // the last force-unlock: hash {by, at, removed}
}

// Keys returns the key names of lock name.
func (n *Node) Keys(name string) Keys {
	base := n.prefix + "{" + name + "}"
	return Keys{Lock: base, Fence: base + ":fence", Channel: base + ":unlock", Forced: base + ":forced"}
}

// Prefix is the key prefix in use.
func (n *Node) Prefix() string { return n.prefix }

// call runs fn under ctx, wrapping it when the client would ignore deadlines.
// When the wrapped fn is given up on (ctx ended first) it runs on: a caller
// must not read what fn writes unless call returned nil.
func (n *Node) call(ctx context.Context, fn func(ctx context.Context) error) error {
	err := n.run(ctx, fn)
	if err != nil {
		n.warm(err)          // warm.go
		err = permError(err) // perm.go
	}
	return err
}

func (n *Node) run(ctx context.Context, fn func(ctx context.Context) error) error {
	if !n.guarded {
		return fn(ctx)
	}
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
	return &Lock{n: n, keys: [2]string{k.Lock, k.Fence}, channel: k.Channel, owner: owner, attempt: attempt, val: owner + "\x00" + attempt, fencing: fencing}
}

// Lock is one attempt's handle on one node. It is what the multilock core
// drives (Acquire, Extend, Release, Fence).
type Lock struct {
	n       *Node
	keys    [2]string // lock, fencing counter
	channel string
	owner   string
	attempt string
	val     string // owner + "\x00" + attempt: the fast path's string form
	fencing bool
}

func (l *Lock) String() string { return l.n.name }

// Node is the node the lock lives on.
func (l *Lock) Node() *Node { return l.n }

func ms(d time.Duration) int64 {
	if d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}

// Acquire asks this node once for the attempt's share.
//
// Without fencing it first sends one plain command, SET key "owner\0attempt"
// NX PX ttl: on a free lock that is the whole acquisition, with no script to
// run (the lock is then a string, which every script reads as the hash it
// stands for; see lock_lib.lua). When the key exists, the acquire script
// decides: this attempt's own earlier SET (a retried call), the same owner
// (reentrancy), or another holder (refused, with its remaining TTL). With
// fencing the script runs at once: it counts the fencing counter in the same
// step.
func (l *Lock) Acquire(ctx context.Context, ttl time.Duration) (granted bool, remaining time.Duration, fence int64, err error) {
	if !l.fencing {
		if granted, done, err := l.acquireFast(ctx, ttl); done {
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
	var set bool
	err = l.n.call(ctx, func(ctx context.Context) error {
		var e error
		// Never PX 0 (SET would keep the key forever): at least 1 ms, as
		// the scripts' ms() rounds.
		set, e = l.n.client.SetNX(ctx, l.keys[0], l.val, max(ttl, time.Millisecond)).Result()
		return e
	})
	if err != nil {
		// set is not read: a wrapped call may still be running (Node.call).
		return false, true, err
	}
	return set, set, nil
}

func (l *Lock) int(ctx context.Context, s *redis.Script, keys []string, args ...any) (int64, error) {
	var v int64
	err := l.n.call(ctx, func(ctx context.Context) error {
		var e error
		v, e = s.Run(ctx, l.n.client, keys, args...).Int64()
		return e
	})
	if err != nil {
		return 0, err // v is not read: a wrapped call may still be running
	}
	return v, nil
}

// Release gives back this attempt's share; true when it held one. When
// the lock became free it tells waiters (unlock channel).
func (l *Lock) Release(ctx context.Context) (bool, error) {
	v, err := l.int(ctx, releaseScript, l.keys[:1], l.val, l.channel, "1")
	return v == 1, err
}

// Rollback is Release for an attempt that never held the lock (it failed
// the quorum): it tells no waiter, since nothing they wait for happened.
func (l *Lock) Rollback(ctx context.Context) (bool, error) {
	v, err := l.int(ctx, releaseScript, l.keys[:1], l.val, l.channel, "0")
	return v == 1, err
}

// Extend re-arms the TTL where this attempt holds a share; never acquires.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) (bool, error) {
	v, err := l.int(ctx, extendScript, l.keys[:1], l.attempt, ms(ttl))
	return v == 1, err
}

// Fence writes token back set-if-greater where this attempt's grant stands.
func (l *Lock) Fence(ctx context.Context, token int64) (bool, error) {
	v, err := l.int(ctx, fenceScript, l.keys[:], l.attempt, token)
	return v == 1, err
}

// ForcedRecordTTL is how long the record of a force-unlock (who, when) is
// kept next to the lock.
const ForcedRecordTTL = 24 * time.Hour

// Force says how ForceRelease forces a lock.
type Force struct {
	// By names who does it (an operator, a tool); recorded with the time.
	By string
	// Hold, when positive, leaves a tombstone in the lock's place that
	// refuses every acquisition for that long, and does not wake waiters:
	// call FinishForce once every node was forced. A caller that forces
	// several nodes one by one needs it: otherwise a waiter could win the
	// nodes already forced and lose those forced after, left holding less
	// than a quorum while it thinks it holds the lock. Zero removes the lock
	// and wakes waiters at once.
	Hold time.Duration
}

// ForceRelease deletes lock name whoever holds it (an operator's tool) and
// wakes its waiters, or holds the name as f.Hold says. It records f.By and
// the time in Keys(name).Forced for ForcedRecordTTL, also when the lock was
// absent, so Inspect shows it. It reports whether a lock was there. The
// fencing counter is kept.
func (n *Node) ForceRelease(ctx context.Context, name string, f Force) (bool, error) {
	k := n.Keys(name)
	hold := int64(0)
	if f.Hold > 0 {
		hold = ms(f.Hold)
	}
	var v int64
	err := n.call(ctx, func(ctx context.Context) error {
		var e error
		v, e = forceReleaseScript.Run(ctx, n.client, []string{k.Lock, k.Forced},
			k.Channel, f.By, time.Now().UnixMilli(), ForcedRecordTTL.Milliseconds(), hold).Int64()
		return e
	})
	if err != nil {
		return false, err // v is not read: a wrapped call may still be running
	}
	return v == 1, nil
}

// FinishForce ends a held force (Force.Hold): it removes the tombstone (only
// that) and wakes the waiters of lock name.
func (n *Node) FinishForce(ctx context.Context, name string) error {
	k := n.Keys(name)
	return n.call(ctx, func(ctx context.Context) error {
		return forceFinishScript.Run(ctx, n.client, []string{k.Lock}, k.Channel).Err()
	})
}

// Forced is the record of the last force-unlock of a lock on a node.
type Forced struct {
	By      string    // who forced it, as the operator gave it
	At      time.Time // when, on the operator's clock
	Removed bool      // whether the lock was present on this node
}

// State is what one node knows of one lock.
type State struct {
	Present bool
	// Holders maps owner to hold count.
	Holders map[string]int64
	// Attempts is how many acquisition attempts hold shares.
	Attempts int
	// TTL is the remaining time to live (0 when absent).
	TTL time.Duration
	// Fence is the fencing counter (0 when none).
	Fence int64
	// Mode is the read-write mode ("read" or "write") of a read-write lock,
	// "" for a plain lock.
	Mode string
	// Forced is the last force-unlock recorded here (nil when none within
	// ForcedRecordTTL).
	Forced *Forced
}

// Inspect reads the state of lock name on this node, in one transaction.
func (n *Node) Inspect(ctx context.Context, name string) (State, error) {
	st, err := n.InspectMany(ctx, []string{name})
	if err != nil {
		return State{}, err
	}
	return st[0], nil
}

// inspectBatch bounds the names read in one transaction by InspectMany, so a
// long list does not block the server in one go.
const inspectBatch = 128

// InspectMany reads the state of several locks, in transactions of up to 128
// names (each a consistent snapshot of its names). The states are in the
// order of names.
func (n *Node) InspectMany(ctx context.Context, names []string) ([]State, error) {
	out := make([]State, len(names))
	for lo := 0; lo < len(names); lo += inspectBatch {
		hi := min(lo+inspectBatch, len(names))
		if err := n.call(ctx, func(ctx context.Context) error { return n.inspect(ctx, names[lo:hi], out[lo:hi]) }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readLockLua reads a lock in either form, in one step: {"string", value}
// or {"hash", field, value, ...}, or {} when absent.
const readLockLua = `local t = redis.call('type', KEYS[1]).ok
if t == 'string' then return {'string', redis.call('get', KEYS[1])} end
if t == 'hash' then
  local h = redis.call('hgetall', KEYS[1])
  table.insert(h, 1, 'hash')
  return h
end
return {}`

// readLock parses readLockLua's answer: the hash's fields, or for the
// string form of a single fast-path holder ("owner\0attempt") its owner.
func readLock(c *redis.Cmd) (hash map[string]string, owner string, isString bool, err error) {
	vs, err := c.StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, "", false, err
	}
	hash = map[string]string{}
	switch {
	case len(vs) == 2 && vs[0] == "string":
		owner, _, isString = strings.Cut(vs[1], "\x00")
	case len(vs) > 0 && vs[0] == "hash":
		for i := 1; i+1 < len(vs); i += 2 {
			hash[vs[i]] = vs[i+1]
		}
	}
	return hash, owner, isString, nil
}

func (n *Node) inspect(ctx context.Context, names []string, out []State) error {
	type cmds struct {
		lock   *redis.Cmd
		forced *redis.MapStringStringCmd
		pt     *redis.DurationCmd
		f      *redis.StringCmd
	}
	cs := make([]cmds, len(names))
	pipe := n.client.TxPipeline()
	tm := pipe.Time(ctx) // a read-write lock's shares carry deadlines on this clock
	for i, name := range names {
		k := n.Keys(name)
		// The lock is a hash, or a string while one fast-path acquisition
		// holds it (Lock.Acquire): a script reads either. EVAL, not
		// EVALSHA: a transaction cannot fall back on NOSCRIPT.
		cs[i] = cmds{lock: pipe.Eval(ctx, readLockLua, []string{k.Lock}), pt: pipe.PTTL(ctx, k.Lock), f: pipe.Get(ctx, k.Fence), forced: pipe.HGetAll(ctx, k.Forced)}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	for i, c := range cs {
		st := State{Holders: map[string]int64{}}
		h, owner, isString, err := readLock(c.lock)
		if err != nil {
			return err
		}
		if isString {
			st.Present, st.Attempts, st.Holders[owner] = true, 1, 1
		}
		for field, v := range h {
			switch {
			case field == "\x00mode":
				// A read-write lock's mode (rw_acquire.lua).
				st.Mode = v
			case strings.HasPrefix(field, "\x00a:"):
				// A plain lock's share is "1"; a read-write lock's is
				// "r|w:deadline_ms:owner", and it alone names the owner.
				if owner, live, ok := rwShare(v, tm.Val()); ok {
					if live {
						st.Attempts++
						st.Holders[owner]++
					}
					continue
				}
				st.Attempts++
			case strings.HasPrefix(field, "\x00"):
				// Other internal fields are hidden.
			default:
				cnt, _ := strconv.ParseInt(v, 10, 64)
				st.Holders[field] = cnt
			}
		}
		// A force's tombstone alone (Force.Hold) is no lock.
		_, tomb := h["\x00forced"]
		st.Present = st.Present || len(h) > 0 && !(tomb && len(h) == 1)
		if d := c.pt.Val(); d > 0 {
			st.TTL = d
		}
		st.Fence, _ = strconv.ParseInt(c.f.Val(), 10, 64)
		if r := c.forced.Val(); len(r) > 0 {
			at, _ := strconv.ParseInt(r["at"], 10, 64)
			st.Forced = &Forced{By: r["by"], At: time.UnixMilli(at), Removed: r["removed"] == "1"}
		}
		out[i] = st
	}
	return nil
}

// rwShare parses a read-write lock's share "r|w:deadline_ms:owner"; live is
// false once its deadline (on the server's clock now) has passed.
func rwShare(v string, now time.Time) (owner string, live, ok bool) {
	m, rest, ok1 := strings.Cut(v, ":")
	dl, owner, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || (m != "r" && m != "w") {
		return "", false, false
	}
	ms, err := strconv.ParseInt(dl, 10, 64)
	if err != nil {
		return "", false, false
	}
	return owner, ms > now.UnixMilli(), true
}

// Scan returns the names of the locks on this node whose names match the
// glob pattern ("*" or "" for all), sorted, each once. It walks the key space
// with SCAN (never KEYS, which blocks the server), count keys per step,
// asking only for keys named prefix{…} (a lock is a hash, or a string while
// one fast-path acquisition holds it): fencing counters, force-unlock records
// and other keys next to a lock end in ":…" and are not names. On a Cluster client
// it scans every master.
func (n *Node) Scan(ctx context.Context, pattern string, count int64) ([]string, error) {
	if pattern == "" {
		pattern = "*"
	}
	if count <= 0 {
		count = 100
	}
	open := n.prefix + "{"
	match := globEscape(open) + pattern + "}"
	seen := map[string]bool{}
	var mu sync.Mutex
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			var keys []string
			err := n.call(ctx, func(ctx context.Context) error {
				var e error
				keys, cursor, e = c.Scan(ctx, cursor, match, count).Result()
				return e
			})
			if err != nil {
				return err
			}
			mu.Lock()
			for _, k := range keys {
				if name, ok := strings.CutPrefix(k, open); ok && strings.HasSuffix(name, "}") {
					seen[name[:len(name)-1]] = true
				}
			}
			mu.Unlock()
			if cursor == 0 {
				return nil
			}
		}
	}
	var err error
	if cc, ok := n.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, n.client)
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// globEscape escapes the characters SCAN's MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Time is the node's clock (TIME).
func (n *Node) Time(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := n.call(ctx, func(ctx context.Context) error {
		var e error
		t, e = n.client.Time(ctx).Result()
		return e
	})
	if err != nil {
		return time.Time{}, err // t is not read: a wrapped call may still be running
	}
	return t, nil
}

// Info returns the fields of one INFO section (e.g. "server", "replication",
// "persistence") as a map.
func (n *Node) Info(ctx context.Context, section string) (map[string]string, error) {
	var s string
	err := n.call(ctx, func(ctx context.Context) error {
		var e error
		s, e = n.client.Info(ctx, section).Result()
		return e
	})
	if err != nil {
		return nil, err
	}
	return ParseInfo(s), nil
}

// ParseInfo parses INFO output into a map of field → value.
func ParseInfo(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// Close stops the node's pub/sub listener (if one was started) and its
// connection warm-ups (warm.go) for good. It does not close the client.
func (n *Node) Close() error {
	n.stopWarm()
	n.subMu.Lock()
	s := n.sub
	n.sub = nil
	n.subMu.Unlock()
	if s != nil {
		return s.close()
	}
	return nil
}
