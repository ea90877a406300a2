package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/quorumlock/quorumlock/internal/lockkeys"
	"github.com/quorumlock/quorumlock/internal/testmode"
)

// DefaultPrefix starts every key and channel this package uses.
const DefaultPrefix = lockkeys.DefaultPrefix

// Node is one Redis deployment taking part in a quorum: a standalone server,
// a Sentinel-managed group or a Cluster, behind the user's go-redis client.
// It is safe for concurrent use. Close stops its pub/sub listener; the client
// stays the caller's.
type Node struct {
	client redis.UniversalClient
	name   string
	prefix string
	opt    options

	// t carries the node's commands, chosen by New from opt and the
	// client: every lock kind sends through it.
	t transport

	subMu sync.Mutex
	sub   *subscriber

	warmer warmer // re-warms the pool's connections after a failure

	fenceRetention time.Duration // WithFenceRetention
	fenceOnArg     any           // fenceArg(true), made by New
	// rearmEvery: the fencing fast path re-arms a counter's retention at
	// most this often per ReusedKeys (fencedKeys), a hundredth of the
	// retention.
	rearmEvery time.Duration

	wakeLost atomic.Int64 // releases whose wake-up message was refused
}

// DefaultFenceRetention is how long a fencing counter stays on a node
// after its last use (WithFenceRetention).
const DefaultFenceRetention = 7 * 24 * time.Hour

// Option configures a Node.
type Option func(*Node)

// options are how the node's commands travel (newTransport).
type options struct {
	batching     bool // WithBatching
	onePipe      bool // WithOnePipeline
	functions    bool // WithFunctions
	functionsSet bool
}

// withName sets the node's name in errors and reports; default the client's
// address.
func withName(name string) Option { return func(n *Node) { n.name = name } }

// WithPrefix sets the key prefix; default DefaultPrefix ("quorumlock:").
func WithPrefix(p string) Option { return func(n *Node) { n.prefix = p } }

// WithBatching turns the coalescing of concurrent lock calls into
// pipelines on or off; default on. Off, every call is its own round
// trip.
func WithBatching(on bool) Option { return func(n *Node) { n.opt.batching = on } }

// WithOnePipeline keeps at most one pipeline in flight on the node while
// calls are queued: for a client that drives several nodes,
// whose own CPU runs out first. Default off; it does nothing with
// batching off.
func WithOnePipeline(on bool) Option { return func(n *Node) { n.opt.onePipe = on } }

// WithFenceRetention sets how long a fencing counter is kept after its last
// use: every script that counts or reads it, every write-back, and the
// fast path when due (at most once per hundredth of the retention per
// ReusedKeys: acquireFenced) re-arm this expiry, so counters of names no
// longer locked go away, at least 99% of the retention after their last
// use. A counter created (or re-created after it expired) starts at the
// node's clock in microseconds (TIME), so the tokens it hands out still
// exceed every token of the counter that expired, as long as the node's
// clock did not go back by more than 99% of the retention. A fair lock's
// ticket counter is kept as long after each ticket counted or written back
// (and while its line lives). Default DefaultFenceRetention (7 days); it
// must be at least one hour.
func WithFenceRetention(d time.Duration) Option { return func(n *Node) { n.fenceRetention = d } }

// MinFenceRetention is the shortest WithFenceRetention accepted.
const MinFenceRetention = time.Hour

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
		return nil, errors.New("quorumlock: nil redis client")
	}
	n := &Node{client: client, prefix: DefaultPrefix, fenceRetention: DefaultFenceRetention, opt: options{batching: true}}
	name, guard := describe(client)
	n.name = name
	for _, o := range opts {
		o(n)
	}
	if !n.opt.functionsSet {
		n.opt.functions = testmode.Functions
	}
	if n.fenceRetention < MinFenceRetention {
		return nil, fmt.Errorf("quorumlock: WithFenceRetention %v: a fencing counter must be kept at least %v, far longer than any lease", n.fenceRetention, MinFenceRetention)
	}
	n.fenceOnArg = strconv.FormatInt(n.fenceRetention.Milliseconds(), 10)
	n.rearmEvery = n.fenceRetention / rearmFraction
	if n.name == "" {
		n.name = fmt.Sprintf("%p", client)
	}
	n.t = newTransport(n, guard)
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
// own level, within the caller's budget). One dial per call, and no pause
// after it: go-redis before v9.18 waits DialerRetryTimeout (100 ms by
// default) even after its last dial, so a short attempt ran out first and
// reported "context deadline exceeded" instead of "connection refused".
func Options(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialerRetryTimeout:    time.Microsecond,
		DialTimeout:           time.Second,
		// Off: Redis before 8 refuses CLIENT MAINT_NOTIFICATIONS on every
		// new connection, and go-redis' auto mode then rewrites the shared
		// options, racing with the batcher's redis.Conn (the lane).
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// Name is the node's name (its address unless set).
func (n *Node) Name() string { return n.name }

// String is the node's name.
func (n *Node) String() string { return n.name }

// fenceArg is the acquire scripts' fencing argument: "0" without fencing,
// else the counters' retention in ms (acquire_lib.lua). Made once by New,
// as an interface value: it goes into every acquire's arguments.
func (n *Node) fenceArg(fencing bool) any {
	if !fencing {
		return noFenceArg
	}
	return n.fenceOnArg
}

var noFenceArg any = "0"

// retentionMS is the counters' retention in ms (fence.lua's ARGV[3]).
func (n *Node) retentionMS() int64 { return n.fenceRetention.Milliseconds() }

// Client is the go-redis client the node was built on.
func (n *Node) Client() redis.UniversalClient { return n.client }

// Keys are the Redis names of one lock. All share the hash tag {name}, so a
// Cluster keeps them in one slot.
type Keys struct {
	Lock    string // hash {owner -> hold count}, or the string FastValue(owner, attempt) of a single fast-path holder
	Fence   string // fencing counter
	Channel string // unlock notifications: Lock + ":unlock", which release.lua builds itself
	Forced  string // the last force-unlock: hash {by, at, removed}

	// fenced: the fencing fast path's state of this name on this node,
	// shared by the attempts made from these Keys (ReusedKeys); nil from
	// Keys.
	fenced *fencedKeys
	// Lock as a command argument, made once: a string put in an
	// interface costs an allocation, and a caller that locks one name
	// again and again keeps its Keys (LockKeys).
	lockArg any
}

// Keys returns the key names of lock name.
func (n *Node) Keys(name string) Keys {
	base := n.prefix + "{" + tagged(name) + "}"
	k := Keys{Lock: base, Fence: base + ":fence", Channel: base + ":unlock", Forced: base + ":forced"}
	k.lockArg = k.Lock
	return k
}

// tagged is name as it goes between the braces of its keys. Redis Cluster
// hashes a key by the text between its first '{' and the first '}' after
// it, or, when that is empty, by the whole key: a name starting with '}'
// would put each key of the lock in another slot. Such a name gets a NUL
// in front (a NUL the quorum package refuses in names), so its keys share
// the tag "\x00"; every other name is used as it is, so keys stay the same
// for the names existing deployments use. A '}' further in is harmless:
// the tag is then the name up to it, the same for every key of the name.
func tagged(name string) string {
	if strings.HasPrefix(name, "}") {
		return "\x00" + name
	}
	return name
}

// untagged is the name whose keys carry tag (tagged's inverse).
func untagged(tag string) string {
	if rest, ok := strings.CutPrefix(tag, "\x00"); ok && strings.HasPrefix(rest, "}") {
		return rest
	}
	return tag
}

// ReusedKeys is Keys for a caller that locks name again and again
// (quorum.Mutex) and hands them to LockKeys each time: they also carry
// what the fencing fast path keeps between attempts (its key names as
// command arguments, and when it last re-armed the counter's retention;
// see acquireFenced).
func (n *Node) ReusedKeys(name string) Keys {
	k := n.Keys(name)
	k.fenced = &fencedKeys{fence: k.Fence}
	return k
}

// call runs fn, which uses the client directly, under ctx (the
// transport's call): when the wrapped fn is given up on (ctx ended first)
// it runs on, so a caller must not read what fn writes unless call
// returned nil.
func (n *Node) call(ctx context.Context, fn func(ctx context.Context) error) error {
	return n.settle(n.t.call(ctx, fn))
}

// settle is what every call does with its error: a failed connection is
// warmed up again, an ACL refusal named.
func (n *Node) settle(err error) error {
	if err != nil {
		n.warm(err)
		err = permError(err)
	}
	return err
}

// Close stops the node's pub/sub listener (if one was started) and its
// connection warm-ups for good. It does not close the client.
func (n *Node) Close() error {
	n.stopWarm()
	n.t.close()
	n.subMu.Lock()
	s := n.sub
	n.sub = nil
	n.subMu.Unlock()
	if s != nil {
		return s.close()
	}
	return nil
}
