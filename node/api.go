// Package node names the pieces of one Redis deployment that a user of
// package quorum meets: the go-redis options a lock needs (Options), the
// per-node state operators read (State, Forced, via quorum/admin), the
// error of a command the node's ACL refused (PermissionError), and Node,
// the handle quorum/admin.New takes.
//
// Most programs never import it: quorum.Dial, quorum.New and
// quorum.FromEnv build the nodes. The Lua scripts and calls behind a node
// live in an internal package and may change in any release.
package node

import (
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
)

// DefaultPrefix starts every key and channel of a lock unless
// quorum.WithKeyPrefix (or WithPrefix) says otherwise.
const DefaultPrefix = node.DefaultPrefix

// ForcedRecordTTL is how long a node keeps the record of a force-unlock
// (Forced) that operators read back with quorum/admin.
const ForcedRecordTTL = node.ForcedRecordTTL

// Options returns go-redis options for one node at addr with the settings
// a lock needs: context deadlines honoured (ContextTimeoutEnabled), no
// go-redis retries (the lock retries at its own level) and one dial
// attempt, so a frozen node cannot stall a quorum. Change the address,
// credentials or TLS on the result and pass redis.NewClient(opts) to
// quorum.New.
func Options(addr string) *redis.Options { return node.Options(addr) }

// Node is one Redis deployment (standalone, Sentinel or Cluster) taking
// part in a lock. quorum builds its nodes itself; a Node is needed only to
// call quorum/admin.New without a quorum.Client.
type Node = node.Node

// Option configures New.
type Option = node.Option

// New wraps a go-redis client as a Node.
func New(client redis.UniversalClient, opts ...Option) (*Node, error) {
	return node.New(client, opts...)
}

// WithPrefix sets the prefix of the node's keys and channels (default
// DefaultPrefix); it must match the clients' quorum.WithKeyPrefix.
func WithPrefix(p string) Option { return node.WithPrefix(p) }

// State is what one node knows of one lock (quorum/admin's NodeState).
type State = node.State

// Forced is the record of the last force-unlock of a lock on a node,
// kept ForcedRecordTTL.
type Forced = node.Forced

// PermissionError is a command the node's Redis user may not run, or a
// key or channel it may not touch (ACL). Command is the refused command
// in lower case, also when a Lua script ran it; it is empty when a key or
// channel pattern was refused. It unwraps to the server's error; find it
// with errors.As.
type PermissionError = node.PermissionError

// FunctionsLibrary is the name of this version's Redis function library
// ("quorumlock_<hash>"), which quorum.WithFunctions(true) calls with FCALL
// instead of EVALSHA: clients of two versions use two libraries side by
// side during a rolling upgrade.
func FunctionsLibrary() string { return node.FunctionsLibrary() }
