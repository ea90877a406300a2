package node

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/lockkeys"
)

// persistentKey reports whether key may have no expiry: the fencing
// counter (Keys.Fence: kept for the fencing retention, re-armed on use,
// but one made by an earlier version has no expiry until its next use).
// Every other key under the prefix carries a TTL, the fair lock's ticket
// counter (FairKeys.Ticket) included.
func persistentKey(key string) bool { return lockkeys.Persistent(key) }

// keysWithoutExpiry lists the keys under this node's prefix that have no
// TTL and are not persistentKey: locks that would never be free again if
// their holder died. A correct run leaves none. It scans (SCAN, never
// KEYS) every master of a Cluster.
func (n *Node) keysWithoutExpiry(ctx context.Context) ([]string, error) {
	cc, ok := n.client.(*redis.ClusterClient)
	if !ok {
		return lockkeys.WithoutExpiry(ctx, n.client, n.prefix)
	}
	var (
		mu  sync.Mutex
		out []string
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys, err := lockkeys.WithoutExpiry(ctx, c, n.prefix)
		mu.Lock()
		out = append(out, keys...)
		mu.Unlock()
		return err
	})
	return out, err
}
