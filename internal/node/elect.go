package node

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Elections keep the leader's value next to the lock: a hash under
// LeaderKey with the lock's expiry (elect_lib.lua lists its fields), re-armed
// by the same extend script that renews the lock and removed by the release
// that gives it back. A Proclaim is two round trips: Prepare keeps the value
// pending (never read), Proclaim commits it; every commit is told on
// LeaderChannel.
var (
	//go:embed elect_lib.lua
	electLibLua string
	//go:embed elect_prepare.lua
	electPrepareLua string
	//go:embed elect_withdraw.lua
	electWithdrawLua string
	//go:embed elect_commit.lua
	electCommitLua string
	//go:embed elect_leader.lua
	electLeaderLua string
	//go:embed elect_tail.lua
	electTailLua string

	electPrepareScript  = script("elect-prepare", lockLibLua+electLibLua+electPrepareLua)
	electWithdrawScript = script("elect-withdraw", electWithdrawLua)
	electCommitScript   = script("elect-commit", lockLibLua+electLibLua+electCommitLua)
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

// Prepare keeps value pending as the leader's next value, for term and its
// rev-th Proclaim, where owner holds lock name; false when it does not.
// Readers never see a pending value: only Proclaim of the same rev makes
// it theirs. Nobody is told.
func (n *Node) Prepare(ctx context.Context, name, owner string, term, rev int64, value string) (bool, error) {
	k := n.Keys(name)
	v, err := n.electInt(ctx, electPrepareScript, k, owner, term, rev, value)
	return v == 1, err
}

// Withdraw removes the pending value of term's rev-th Proclaim (Prepare)
// when it is still pending here: that Proclaim failed, and its value must
// never be committed from this node. False when it was not pending here.
func (n *Node) Withdraw(ctx context.Context, name, owner string, term, rev int64) (bool, error) {
	k := n.Keys(name)
	v, err := n.electInt(ctx, electWithdrawScript, k, owner, term, rev)
	return v == 1, err
}

// Proclaim commits value as the leader's, for term and its rev-th
// Proclaim, where owner holds lock name; false when it does not. A rev
// already committed here, or a later one, is kept: a commit never lowers
// the rev, so a reader may write back what it read and a late message
// changes nothing. Followers are told on the leader channel.
func (n *Node) Proclaim(ctx context.Context, name, owner string, term, rev int64, value string) (bool, error) {
	k := n.Keys(name)
	v, err := n.electInt(ctx, electCommitScript, k, owner, term, rev, value, k.LeaderChannel())
	return v == 1, err
}

// electInt runs one of the election's scripts on the lock's and the
// value's keys and reads its integer answer.
func (n *Node) electInt(ctx context.Context, s *redis.Script, k Keys, args ...any) (int64, error) {
	return n.evalInt(ctx, s, []string{k.Lock, k.LeaderKey()}, args...)
}

// Leader is an election's leader as one node sees it.
type Leader struct {
	Held  bool          // a leader holds the lock here
	Term  int64         // its term (fencing token)
	Rev   int64         // the rev of its last Proclaim committed here; 0 before the first
	Value string        // its committed value ("" while Rev is 0)
	TTL   time.Duration // the lock's remaining time on this node
	Owner string        // the lock's owner: a write-back (Proclaim) names it
}

// Leader reads the leader of election lock name on this node.
func (n *Node) Leader(ctx context.Context, name string) (Leader, error) {
	k := n.Keys(name)
	r, err := n.eval(ctx, electLeaderScript, []string{k.Lock, k.LeaderKey()})
	if err != nil {
		return Leader{}, err
	}
	res, isArray := r.([]any)
	if !isArray {
		return Leader{}, fmt.Errorf("quorumlock: script elect-leader answered %T, want an array", r)
	}
	if len(res) == 0 || res[0] != int64(1) {
		return Leader{}, nil
	}
	if len(res) != 6 {
		return Leader{}, fmt.Errorf("quorumlock: script elect-leader answered %d values, want 6", len(res))
	}
	out := Leader{Held: true}
	var ok [5]bool
	out.Term, ok[0] = res[1].(int64)
	out.Rev, ok[1] = res[2].(int64)
	out.Value, ok[2] = res[3].(string)
	pt, ok3 := res[4].(int64)
	ok[3] = ok3
	out.Owner, ok[4] = res[5].(string)
	if ok != [5]bool{true, true, true, true, true} {
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
