package quorum

import (
	"context"
	"errors"
	"sync"
)

// Queued returns, per name, how many waiters stand in line for the fair
// lock (FairMutex) of that name: the longest line among the nodes that
// answered (a waiter queues on every node it reaches; one that died stays
// counted until its queue deadline, the client TTL). 0 for a plain lock or
// nobody waiting. Each node gets the same time as Inspect; nodes that fail
// are named in the error (each a *NodeError) and the counts come from the
// others. An operator's tool, like Inspect.
func (c *Client) Queued(ctx context.Context, names ...string) ([]int, error) {
	out := make([]int, len(names))
	if len(names) == 0 {
		return out, nil
	}
	per := make([][]int64, len(c.nodes))
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx, cancel := context.WithTimeout(ctx, inspectNodeTimeout)
			defer cancel()
			if per[i], errs[i] = nd.QueueLens(nctx, names); errs[i] != nil {
				errs[i] = &NodeError{Node: nd.Name(), Err: errs[i]}
			}
		}()
	}
	wg.Wait()
	for _, lens := range per {
		for j, l := range lens {
			out[j] = max(out[j], int(l))
		}
	}
	return out, errors.Join(errs...)
}
