package node

import (
	"context"
	_ "embed"
	"fmt"
	"time"
)

// Elections keep the leader's value next to the lock: a hash {owner, term,
// rev, value} under LeaderKey with the lock's expiry, re-armed by the same
// extend script that renews the lock and removed by the release that gives
// it back. Every change is told on LeaderChannel.
var (
	//go:embed elect_lib.lua
	electLibLua string
	//go:embed elect_proclaim.lua
	electProclaimLua string
	//go:embed elect_leader.lua
	electLeaderLua string
	//go:embed elect_tail.lua
	electTailLua string

	electProclaimScript = script("elect-proclaim", lockLibLua+electLibLua+electProclaimLua)
	electLeaderScript   = script("elect-leader", lockLibLua+electLibLua+electLeaderLua)
	// The lock's own extend and release bodies, wrapped as a function, then
	// the election's epilogue: one script, one round trip, as for a lock.
	electExtendScript  = script("elect-extend", wrapShare("extend", extendLua))
	electReleaseScript = script("elect-release", wrapShare("release", releaseLua+releaseHashLua))
)

func wrapShare(mode, body string) string {
	return lockLibLua + "local MODE = '" + mode + "'\nlocal function share()\n" + body + "\nend\n" + electTailLua
}

// LeaderKey is the key of the leader's value of the election whose lock
// has keys k.
func (k Keys) LeaderKey() string { return k.Lock + ":leader" }

// LeaderChannel is the channel told of every new value and resignation.
func (k Keys) LeaderChannel() string { return k.Lock + ":elected" }

// Elect makes this lock handle an election's: its extensions keep the
// leader's value alive with the lock and its release removes the value and
// tells LeaderChannel. It returns l; call it before Acquire.
func (l *Lock) Elect() *Lock {
	l.leaderKey = l.keys[0] + ":leader"
	l.leaderChan = l.keys[0] + ":elected"
	return l
}

// shareKeys are the keys of a release or extend: the lock's, and the
// leader's value for an election's handle.
func (l *Lock) shareKeys() []string {
	if l.leaderKey == "" {
		return l.keys[:1]
	}
	return []string{l.keys[0], l.leaderKey}
}

// Proclaim writes value as the leader's, for term and its rev-th Proclaim,
// where owner holds lock name; false when it does not. Followers are told
// on the leader channel.
func (n *Node) Proclaim(ctx context.Context, name, owner string, term, rev int64, value string) (bool, error) {
	k := n.Keys(name)
	var v int64
	err := n.call(ctx, func(ctx context.Context) error {
		var e error
		keys, args := []string{k.Lock, k.LeaderKey()}, []any{owner, term, rev, value, k.LeaderChannel()}
		if n.funcs {
			v, e = n.fcallCmd(ctx, electProclaimScript, keys, args...).Int64()
			return e
		}
		v, e = electProclaimScript.Run(ctx, n.client, keys, args...).Int64()
		return e
	})
	if err != nil {
		return false, err // v is not read: a wrapped call may still be running
	}
	return v == 1, nil
}

// Leader is an election's leader as one node sees it.
type Leader struct {
	Held  bool          // a leader holds the lock here
	Term  int64         // its term (fencing token)
	Rev   int64         // the number of its last Proclaim within the term
	Value string        // its value
	TTL   time.Duration // the lock's remaining time on this node
}

// Leader reads the leader of election lock name on this node.
func (n *Node) Leader(ctx context.Context, name string) (Leader, error) {
	k := n.Keys(name)
	var res []any
	err := n.call(ctx, func(ctx context.Context) error {
		var e error
		if n.funcs {
			res, e = n.fcallCmd(ctx, electLeaderScript, []string{k.Lock, k.LeaderKey()}).Slice()
			return e
		}
		res, e = electLeaderScript.Run(ctx, n.client, []string{k.Lock, k.LeaderKey()}).Slice()
		return e
	})
	if err != nil {
		return Leader{}, err
	}
	if len(res) == 0 || res[0] != int64(1) {
		return Leader{}, nil
	}
	if len(res) != 5 {
		return Leader{}, fmt.Errorf("quorumlock: script elect-leader answered %d values, want 5", len(res))
	}
	out := Leader{Held: true}
	var ok [4]bool
	out.Term, ok[0] = res[1].(int64)
	out.Rev, ok[1] = res[2].(int64)
	out.Value, ok[2] = res[3].(string)
	pt, ok3 := res[4].(int64)
	ok[3] = ok3
	if ok != [4]bool{true, true, true, true} {
		return Leader{}, fmt.Errorf("quorumlock: script elect-leader answered %v", res)
	}
	if pt > 0 {
		out.TTL = time.Duration(pt) * time.Millisecond
	}
	return out, nil
}

// WatchChannel is WatchAs on any channel of this node's prefix (an
// election's LeaderChannel).
func (n *Node) WatchChannel(seq uint64, channel string, signal, ready chan<- struct{}, wakeAll bool) *Watch {
	return n.watchChannel(seq, channel, signal, ready, wakeAll)
}
