// Package node is one Redis deployment (a standalone server, a
// Sentinel-managed group or a Cluster, behind the caller's go-redis client)
// taking part in a lock. A Node hands out one multilock.Locker per lock
// kind (Lock, RWLock), which multilock.New combines into a quorum; the
// package also names what operators read back (State, Forced, via
// quorum/admin) and the error of a command the node's ACL refused
// (PermissionError).
//
// Most programs never import it: quorum.Dial, quorum.New and
// quorum.FromEnv build the nodes, and quorum's locks wait, renew and fence
// on top of them. Use it to drive locks by hand, to call quorum/admin.New
// without a quorum.Client, or for the go-redis options a lock needs
// (Options). The Lua scripts and calls behind a node live in an internal
// package and may change in any release.
package node

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/multilock"
)

// DefaultPrefix starts every key and channel of a lock unless
// quorum.WithKeyPrefix (or WithPrefix) says otherwise.
const DefaultPrefix = "quorumlock:"

// ForcedRecordTTL is how long a node keeps the record of a force-unlock
// (Forced) that operators read back with quorum/admin.
const ForcedRecordTTL = 24 * time.Hour

// Options returns go-redis options for one node at addr with the settings
// a lock needs: context deadlines honoured (ContextTimeoutEnabled), no
// go-redis retries (the lock retries at its own level) and one dial
// attempt, so a frozen node cannot stall a quorum. Change the address,
// credentials or TLS on the result and pass redis.NewClient(opts) to
// quorum.New or New.
func Options(addr string) *redis.Options { return node.Options(addr) }

// FunctionsLibrary is the name of this version's Redis function library
// ("quorumlock_<hash>"), which quorum.WithFunctions(true) calls with FCALL
// instead of EVALSHA: clients of two versions use two libraries side by
// side during a rolling upgrade.
func FunctionsLibrary() string { return node.FunctionsLibrary() }

// Node is one Redis deployment taking part in a lock, behind a go-redis
// client. It is safe for concurrent use. Close it when done; the client
// stays the caller's.
type Node struct {
	n *node.Node
}

// Option configures New.
type Option func(*options)

type options struct {
	inner []node.Option
}

// WithPrefix sets the prefix of the node's keys and channels (default
// DefaultPrefix); it must match the clients' quorum.WithKeyPrefix.
func WithPrefix(p string) Option {
	return func(o *options) { o.inner = append(o.inner, node.WithPrefix(p)) }
}

// New wraps a go-redis client as a Node; it sends nothing to the server.
// With a client made from Options every call ends by its context's
// deadline on the connection; with another client the call still returns
// by its deadline, and the abandoned command ends at the client's own read
// timeout.
func New(client redis.UniversalClient, opts ...Option) (*Node, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	n, err := node.New(client, o.inner...)
	if err != nil {
		return nil, err
	}
	return &Node{n: n}, nil
}

// Close stops what the node started (its pub/sub listener, the batching of
// its calls); it does not close the client.
func (n *Node) Close() error { return n.n.Close() }

// Name is the node's name in errors and reports, made from the client's
// address.
func (n *Node) Name() string { return n.n.Name() }

// String is Name.
func (n *Node) String() string { return n.n.Name() }

// Keys are the Redis names of one lock on a node. All share the hash tag
// {name}, so a Cluster keeps them in one slot, and all start with the
// node's prefix (WithPrefix): the patterns a lock client's Redis user needs
// (docs/operations.md).
type Keys struct {
	// Lock is the lock itself, with the lock's TTL: a string (its single
	// holder's attempt) or a hash (holders and their hold counts).
	Lock string
	// Fence is the fencing counter, kept after the lock is free
	// (quorum.WithFenceRetention) so that tokens keep increasing.
	Fence string
	// Channel is the pub/sub channel told when the lock becomes free.
	Channel string
	// Forced is the record of the last force-unlock (Forced), kept
	// ForcedRecordTTL.
	Forced string
}

// Keys returns the names of lock name's keys on this node.
func (n *Node) Keys(name string) Keys {
	k := n.n.Keys(name)
	return Keys{Lock: k.Lock, Fence: k.Fence, Channel: k.Channel, Forced: k.Forced}
}

// Lock returns one acquisition attempt of the plain (exclusive) lock name
// by owner on this node: the sub-lock multilock.New takes. Each call makes
// a new attempt with an id of its own; acquire it once, then extend and
// release it. Another attempt of the same owner is granted too and counts
// one more hold (a reentrant lock); another owner is refused while a hold
// lasts. With fencing, a grant reports the lock's fencing counter,
// incremented.
//
// Besides a multilock.Locker, the result is a multilock.Fencer,
// multilock.Rollbacker, multilock.FenceKeeper and multilock.DeadlineBound;
// its String is the node's name. name and owner must not be empty nor
// contain a NUL byte.
func (n *Node) Lock(name, owner string, fencing bool) (multilock.Locker, error) {
	if err := check(name, owner); err != nil {
		return nil, err
	}
	return n.n.Lock(name, owner, attempt(owner), fencing), nil
}

// RWLock is Lock for a share of read-write lock name: a read share
// (write false), which readers hold together, or the write share, which a
// writer holds alone. A read-write lock lives in the keys of the plain lock
// of the same name, so the two exclude each other. The result is a
// multilock.Locker, multilock.Fencer, multilock.Rollbacker and
// multilock.FenceKeeper.
func (n *Node) RWLock(name, owner string, write, fencing bool) (multilock.Locker, error) {
	if err := check(name, owner); err != nil {
		return nil, err
	}
	return n.n.RWLock(name, owner, attempt(owner), write, fencing), nil
}

// check refuses what the node's scripts cannot store unambiguously.
func check(name, owner string) error {
	switch {
	case name == "":
		return errors.New("quorumlock: empty lock name")
	case owner == "":
		return errors.New("quorumlock: empty owner")
	case strings.ContainsRune(name, 0):
		return errors.New("quorumlock: a lock name must not contain a NUL byte")
	case strings.ContainsRune(owner, 0):
		return errors.New("quorumlock: the owner must not contain a NUL byte")
	}
	return nil
}

// attempt makes an attempt id unique among processes that share owner:
// owner, a dot and 64 random bits, the form whose fast-path value is the
// id alone.
func attempt(owner string) string {
	return owner + "." + strconv.FormatUint(rand.Uint64(), 36)
}

func init() {
	// The library's errors carry the internal form of a PermissionError;
	// errors.As finds it as this package's.
	node.PermissionAs = func(e *node.PermissionError, target any) bool {
		p, ok := target.(**PermissionError)
		if ok {
			*p = (*PermissionError)(e)
		}
		return ok
	}
	// quorum hands its nodes to quorum/admin.New, which works on what they
	// wrap.
	node.ToPublic = func(n *node.Node) any { return &Node{n: n} }
	node.FromPublic = func(p any) *node.Node { return p.(*Node).n }
}
