package node

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The label registry: who a client is, for operators, kept apart from its
// locks.
//
// A lock's value names its owner with the client's short random id
// ("id:seq", see FastValue), not with the human label of the client
// (quorum.WithLabel, "host:pid" by default): a label in every value would
// make each held lock about twice the size of a bare SET NX lock.
// Instead a client records its label once per node, under
// prefix + "client:" + id, with an expiry it renews while it runs; Inspect
// reads it back for the holders it finds. A label that expired or was lost
// with a node's data only costs operators the human name (they see the id).

// LabelKey is the key of client id's label on this node.
func (n *Node) LabelKey(id string) string { return n.prefix + "client:" + id }

// SetLabel records label as the human name of client id on this node for
// ttl.
func (n *Node) SetLabel(ctx context.Context, id, label string, ttl time.Duration) error {
	return n.call(ctx, func(ctx context.Context) error {
		return n.client.Set(ctx, n.LabelKey(id), label, ttl).Err()
	})
}

// DropLabel removes client id's label from this node (a client that
// closes leaves nothing behind).
func (n *Node) DropLabel(ctx context.Context, id string) error {
	return n.call(ctx, func(ctx context.Context) error {
		return n.client.Del(ctx, n.LabelKey(id)).Err()
	})
}

// clientOf is the id of the client that made owner ("id:seq", the part
// before the last ':'), "" when owner has no such form.
func clientOf(owner string) string {
	if i := strings.LastIndexByte(owner, ':'); i > 0 {
		return owner[:i]
	}
	return ""
}

// labels reads the registered labels of the owners in sts (clientOf) into
// each state's Labels, in one pipeline. Owners without a label are left
// out.
func (n *Node) labels(ctx context.Context, sts []State) error {
	ids := map[string]*redis.StringCmd{}
	for _, st := range sts {
		for o := range st.Holders {
			if id := clientOf(o); id != "" && !strings.Contains(id, "#") {
				ids[id] = nil
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	pipe := n.client.Pipeline()
	for id := range ids {
		ids[id] = pipe.Get(ctx, n.LabelKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	for i := range sts {
		for o := range sts[i].Holders {
			c := ids[clientOf(o)]
			if c == nil || c.Err() != nil {
				continue
			}
			if sts[i].Labels == nil {
				sts[i].Labels = map[string]string{}
			}
			sts[i].Labels[o] = c.Val()
		}
	}
	return nil
}
