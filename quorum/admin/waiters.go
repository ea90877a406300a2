package admin

import (
	"context"

	"github.com/quorumlock/quorumlock/internal/fanout"
	"github.com/quorumlock/quorumlock/internal/oneline"
	"github.com/quorumlock/quorumlock/multilock"
)

// Queued returns, per name, how many waiters stand in line for the fair
// lock (quorum.FairMutex) of that name: the longest line among the nodes
// that answered (a waiter queues on every node it reaches; one that died
// stays counted until its queue deadline, the client TTL). 0 for a plain
// lock or nobody waiting. Each node gets the same time as Inspect; nodes
// that fail are named in the error (each a *multilock.NodeError) and the
// counts come from the others.
func (t *Tools) Queued(ctx context.Context, names ...string) ([]int, error) {
	out := make([]int, len(names))
	if len(names) == 0 {
		return out, nil
	}
	per := make([][]int64, len(t.nodes))
	errs := fanout.All(len(t.nodes), func(i int) error {
		nctx, cancel := context.WithTimeout(ctx, inspectNodeTimeout)
		defer cancel()
		var err error
		if per[i], err = t.nodes[i].QueueLens(nctx, names); err != nil {
			return &multilock.NodeError{Node: t.nodes[i].Name(), Err: err}
		}
		return nil
	})
	for _, lens := range per {
		for j, l := range lens {
			out[j] = max(out[j], int(l))
		}
	}
	return out, oneline.Join(errs...)
}
