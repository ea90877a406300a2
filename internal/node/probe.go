package node

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

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

// Persistence is what a node's configuration says about keeping its data
// across a crash (Node.Persistence, Checks.Persistence).
type Persistence int8

const (
	// PersistenceUnknown: not asked yet, or the node did not answer.
	PersistenceUnknown Persistence = iota
	// Persistent: appendonly yes with appendfsync always, so a grant is on
	// disk before the node answers it.
	Persistent
	// NotPersistent: anything else, including a node that refuses CONFIG
	// (renamed or denied): nothing vouches for its data.
	NotPersistent
)

// persistenceCmd asks CONFIG GET appendonly appendfsync (one command).
func persistenceCmd(ctx context.Context) *redis.MapStringStringCmd {
	return redis.NewMapStringStringCmd(ctx, "config", "get", "appendonly", "appendfsync")
}

// persistenceOf reads persistenceCmd's answer. A server's error reply
// (CONFIG refused) is NotPersistent; a failed call is PersistenceUnknown
// with its error.
func persistenceOf(cmd *redis.MapStringStringCmd) (Persistence, error) {
	m, err := cmd.Result()
	if err != nil {
		var re redis.Error
		if errors.As(err, &re) {
			return NotPersistent, nil
		}
		return PersistenceUnknown, err
	}
	if m["appendonly"] == "yes" && m["appendfsync"] == "always" {
		return Persistent, nil
	}
	return NotPersistent, nil
}

// Persistence asks the node whether it keeps every write on disk before it
// answers (appendonly yes and appendfsync always) with one CONFIG GET. On a
// Cluster client it asks every server the client knows (masters and
// replicas, in parallel): the Cluster is Persistent only when each of them
// is, since a key's master, or the replica a failover promotes, may be any
// of them. A server added to the Cluster later is not asked.
func (n *Node) Persistence(ctx context.Context) (Persistence, error) {
	var p Persistence
	err := n.call(ctx, func(ctx context.Context) error {
		var e error
		if cc, ok := n.client.(*redis.ClusterClient); ok {
			p, e = clusterPersistence(ctx, cc)
			return e
		}
		cmd := persistenceCmd(ctx)
		_ = n.client.Process(ctx, cmd)
		p, e = persistenceOf(cmd)
		return e
	})
	if err != nil {
		return PersistenceUnknown, err
	}
	return p, nil
}

// clusterPersistence is Persistence over every server of a Cluster: Persistent
// when all are, NotPersistent when one is not (whatever the others say),
// else PersistenceUnknown with the first error.
func clusterPersistence(ctx context.Context, cc *redis.ClusterClient) (Persistence, error) {
	var mu sync.Mutex
	not, servers := false, 0
	err := cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		cmd := persistenceCmd(ctx)
		_ = c.Process(ctx, cmd)
		p, err := persistenceOf(cmd)
		mu.Lock()
		defer mu.Unlock()
		servers++
		not = not || p == NotPersistent
		return err
	})
	switch {
	case not:
		return NotPersistent, nil
	case err != nil:
		return PersistenceUnknown, err
	case servers == 0:
		return PersistenceUnknown, errors.New("the Cluster client knows no server")
	}
	return Persistent, nil
}
