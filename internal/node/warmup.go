package node

import "context"

// Warm makes sure the node's client has a ready connection: a PING (on
// every master of a Cluster), dialling if the pool is empty; and when the
// batcher has a lane, one for the lane and one for the pool. A lock
// attempt's per-node deadline is short (50 ms with 5 nodes and the default
// attempt timeout), too short on a busy machine for a dial, the handshake
// and a command together; a client that warmed up first spends it on the
// command alone. In Functions mode it also loads the function library where
// it is missing, so the first attempt does not.
func (n *Node) Warm(ctx context.Context) error {
	return n.call(ctx, func(ctx context.Context) error {
		if err := ping(ctx, n.client); err != nil {
			return err
		}
		return n.t.prime(ctx)
	})
}
