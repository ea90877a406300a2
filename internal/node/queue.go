package node

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// QueueLens returns, per name, how many waiters stand in the fair lock's
// line on this node (FairKeys.Queue entries with a ticket or taking one;
// not the tombstones of waiters that left). 0 for a name that is not a
// fair lock or has nobody waiting. A waiter that died stays counted until
// its queue deadline passes and the next fair script on the name purges it.
func (n *Node) QueueLens(ctx context.Context, names []string) ([]int64, error) {
	out := make([]int64, len(names))
	for lo := 0; lo < len(names); lo += inspectBatch {
		hi := min(lo+inspectBatch, len(names))
		cmds := make([]*redis.IntCmd, hi-lo)
		err := n.call(ctx, func(ctx context.Context) error {
			_, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i, name := range names[lo:hi] {
					cmds[i] = p.ZCount(ctx, n.FairKeys(name).Queue, "0", "+inf")
				}
				return nil
			})
			return err
		})
		if err != nil {
			return nil, err // cmds are not read: a wrapped call may still be running
		}
		for i, c := range cmds {
			out[lo+i] = c.Val()
		}
	}
	return out, nil
}
