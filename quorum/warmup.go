package quorum

import (
	"context"
	"errors"
	"sync"
	"time"
)

// dialWarmTimeout bounds the warm-up Dial and FromEnv do.
const dialWarmTimeout = time.Second

// ErrUnanswered marks a failed attempt in which no node refused: the nodes
// that did not grant only failed to answer within the attempt timeout (or
// its per-node share). The lock may well be free; raise
// WithAttemptTimeout on a slow network or a busy machine, or look at the
// nodes. It comes joined with ErrNotObtained and the per-node errors.
var ErrUnanswered = errors.New("quorumlock: nodes did not answer in time (none said the lock is held): raise WithAttemptTimeout or check the nodes")

// Warm connects to every node in parallel (a PING each) so that the first
// attempts spend their short per-node deadlines on the lock, not on
// dialling. Dial and FromEnv warm up by themselves, for at most a second;
// call Warm after New with your own clients. Nodes that do not answer
// within ctx are named in the error (each a *NodeError); the client works
// without them as long as a quorum answers later.
func (c *Client) Warm(ctx context.Context) error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Warm(ctx); err != nil {
				errs[i] = &NodeError{Node: n.Name(), Err: err}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// markUnanswered puts ErrUnanswered in front of a failed attempt's error
// when every node that did not grant only failed to answer in time.
func markUnanswered(err error) error {
	if err == nil || !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrClosed) {
		return err
	}
	silent := 0
	var walk func(error) bool
	walk = func(e error) bool {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				if !walk(x) {
					return false
				}
			}
			return true
		}
		var ne *NodeError
		if !errors.As(e, &ne) || e != error(ne) {
			return true // the sentinel, the caller's context: not a node's word
		}
		if rank(ne.Err) == 0 {
			silent++
			return true
		}
		return false
	}
	if walk(err) && silent > 0 {
		return errors.Join(ErrUnanswered, err)
	}
	return err
}
