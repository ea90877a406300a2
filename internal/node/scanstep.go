package node

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ScanStep is one SCAN step of a walk over this node's lock names that a
// caller keeps going itself, a page at a time: it asks shard shard (0 for a
// standalone; a Cluster client's masters in the order of their addresses)
// for the step at cursor, count keys, and returns the lock names it found
// matching the glob pattern, sorted, each once, with the cursor of the next
// step on that shard (0 when the shard is done) and how many shards the node
// has. The same cursor and count on an unchanged key space give the same
// step again, which lets a caller resume inside a step.
func (n *Node) ScanStep(ctx context.Context, pattern string, shard int, cursor uint64, count int64) (names []string, next uint64, shards int, err error) {
	if pattern == "" {
		pattern = "*"
	}
	open := n.prefix + "{"
	match := globEscape(open) + pattern + "}"
	var c redis.Cmdable = n.client
	shards = 1
	if cc, ok := n.client.(*redis.ClusterClient); ok {
		var masters []*redis.Client
		var mu sync.Mutex
		if err := cc.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
			mu.Lock()
			masters = append(masters, m)
			mu.Unlock()
			return nil
		}); err != nil {
			return nil, 0, 0, n.settle(err)
		}
		slices.SortFunc(masters, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
		shards = len(masters)
		if shard >= shards {
			return nil, 0, shards, nil
		}
		c = masters[shard]
	}
	var keys []string
	err = n.call(ctx, func(ctx context.Context) error {
		var e error
		keys, next, e = c.Scan(ctx, cursor, match, count).Result()
		return e
	})
	if err != nil {
		return nil, 0, shards, err
	}
	for _, k := range keys {
		if name, ok := lockName(open, k); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), next, shards, nil
}

// lockName is the lock name of key prefix{name}, false for any other key.
func lockName(open, key string) (string, bool) {
	name, ok := strings.CutPrefix(key, open)
	if !ok || !strings.HasSuffix(name, "}") {
		return "", false
	}
	return untagged(name[:len(name)-1]), true
}

// Exist reports, for each of names, whether its lock key exists on this
// node (held, a leftover, or a force-unlock's tombstone), in one pipeline:
// far cheaper than Inspect, for a caller that only needs to know whether
// this node has seen the name.
func (n *Node) Exist(ctx context.Context, names []string) ([]bool, error) {
	cmds := make([]*redis.IntCmd, len(names))
	err := n.call(ctx, func(ctx context.Context) error {
		_, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, name := range names {
				cmds[i] = p.Exists(ctx, n.Keys(name).Lock)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(names))
	for i, c := range cmds {
		out[i] = c.Val() > 0
	}
	return out, nil
}
