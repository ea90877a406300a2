package node

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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

	// Scripts run by SHA (EVALSHA) with a fallback to the body (EVAL) when
	// the server's script cache does not have them.
	acquireScript      = redis.NewScript(acquireLua)
	releaseScript      = redis.NewScript(releaseLua)
	extendScript       = redis.NewScript(extendLua)
	fenceScript        = redis.NewScript(fenceLua)
	forceReleaseScript = redis.NewScript(forceReleaseLua)
)

// DefaultPrefix starts every key and channel this package uses.
const DefaultPrefix = "quorumlock:"

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
	Lock    string // hash {owner -> hold count}
	Fence   string // fencing counter
	Channel string // unlock notifications
}

// Keys returns the key names of lock name.
func (n *Node) Keys(name string) Keys {
	base := n.prefix + "{" + name + "}"
	return Keys{Lock: base, Fence: base + ":fence", Channel: base + ":unlock"}
}

// Prefix is the key prefix in use.
func (n *Node) Prefix() string { return n.prefix }

// call runs fn under ctx, wrapping it when the client would ignore deadlines.
func (n *Node) call(ctx context.Context, fn func(ctx context.Context) error) error {
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
// on this node. attempt must be unique per attempt: the scripts count hold
// shares per attempt, so a late or repeated message of one attempt never
// touches another's share. fencing makes grants count the fencing counter.
func (n *Node) Lock(name, owner, attempt string, fencing bool) *Lock {
	k := n.Keys(name)
	return &Lock{n: n, keys: []string{k.Lock, k.Fence}, channel: k.Channel, owner: owner, attempt: attempt, fencing: fencing}
}

// Lock is one attempt's handle on one node. It is what the multilock core
// drives (Acquire, Extend, Release, Fence).
type Lock struct {
	n       *Node
	keys    []string
	channel string
	owner   string
	attempt string
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

// Acquire runs the acquire script once.
func (l *Lock) Acquire(ctx context.Context, ttl time.Duration) (granted bool, remaining time.Duration, fence int64, err error) {
	fenceArg := "0"
	if l.fencing {
		fenceArg = "1"
	}
	var res []int64
	err = l.n.call(ctx, func(ctx context.Context) error {
		var e error
		res, e = acquireScript.Run(ctx, l.n.client, l.keys, l.owner, ms(ttl), l.attempt, fenceArg).Int64Slice()
		return e
	})
	if err != nil {
		return false, 0, 0, err
	}
	if len(res) != 2 {
		return false, 0, 0, fmt.Errorf("node: acquire script answered %v", res)
	}
	if res[0] == 1 {
		return true, 0, res[1], nil
	}
	if res[1] > 0 {
		remaining = time.Duration(res[1]) * time.Millisecond
	}
	return false, remaining, 0, nil
}

func (l *Lock) int(ctx context.Context, s *redis.Script, keys []string, args ...any) (int64, error) {
	var v int64
	err := l.n.call(ctx, func(ctx context.Context) error {
		var e error
		v, e = s.Run(ctx, l.n.client, keys, args...).Int64()
		return e
	})
	return v, err
}

// Release gives back this attempt's share; true when it held one.
func (l *Lock) Release(ctx context.Context) (bool, error) {
	v, err := l.int(ctx, releaseScript, l.keys[:1], l.owner, l.attempt, l.channel)
	return v == 1, err
}

// Extend re-arms the TTL where this attempt holds a share; never acquires.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) (bool, error) {
	v, err := l.int(ctx, extendScript, l.keys[:1], l.attempt, ms(ttl))
	return v == 1, err
}

// Fence writes token back set-if-greater where this attempt's grant stands.
func (l *Lock) Fence(ctx context.Context, token int64) (bool, error) {
	v, err := l.int(ctx, fenceScript, l.keys, l.attempt, token)
	return v == 1, err
}

// ForceRelease deletes lock name whoever holds it and wakes its waiters (an
// operator's tool). It reports whether a lock was there.
func (n *Node) ForceRelease(ctx context.Context, name string) (bool, error) {
	k := n.Keys(name)
	var v int64
	err := n.call(ctx, func(ctx context.Context) error {
		var e error
		v, e = forceReleaseScript.Run(ctx, n.client, []string{k.Lock}, k.Channel).Int64()
		return e
	})
	return v == 1, err
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
}

// Inspect reads the state of lock name on this node.
func (n *Node) Inspect(ctx context.Context, name string) (State, error) {
	k := n.Keys(name)
	var st State
	err := n.call(ctx, func(ctx context.Context) error {
		pipe := n.client.TxPipeline()
		h := pipe.HGetAll(ctx, k.Lock)
		pt := pipe.PTTL(ctx, k.Lock)
		f := pipe.Get(ctx, k.Fence)
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		st.Holders = map[string]int64{}
		for field, v := range h.Val() {
			if strings.HasPrefix(field, "\x00a:") {
				st.Attempts++
				continue
			}
			if strings.HasPrefix(field, "\x00") {
				continue
			}
			c, _ := strconv.ParseInt(v, 10, 64)
			st.Holders[field] = c
		}
		st.Present = len(h.Val()) > 0
		if d := pt.Val(); d > 0 {
			st.TTL = d
		}
		st.Fence, _ = strconv.ParseInt(f.Val(), 10, 64)
		return nil
	})
	return st, err
}

// Time is the node's clock (TIME).
func (n *Node) Time(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := n.call(ctx, func(ctx context.Context) error {
		var e error
		t, e = n.client.Time(ctx).Result()
		return e
	})
	return t, err
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

// Close stops the node's pub/sub listener (if one was started). It does not
// close the client.
func (n *Node) Close() error {
	n.subMu.Lock()
	s := n.sub
	n.sub = nil
	n.subMu.Unlock()
	if s != nil {
		return s.close()
	}
	return nil
}
