package quorum

import (
	"context"
	"sync"

	"github.com/quorumlock/quorumlock/internal/node"
)

// waitLine is a client's part in the lines of waiters of plain Mutexes: a
// Lock call queues in each name's line on a node that refuses it for
// another client's holder (or behind another client's waiters), and a
// release wakes the head of the line alone, on the head's client's wait
// channel (node.LinePlace), instead of every waiting client. Goroutines of
// one client handing a lock among themselves leave no line: the client
// wakes them in its own order, on the lock's channel.
type waitLine struct {
	channel string // the client's wait channel (node.WaitChannel)
	// once: the channel is subscribed on every node at the client's first
	// wait and stays subscribed until Close (node.Stand), so a wait costs
	// no subscription, and no second try after one.
	once sync.Once
}

// stand subscribes the client's wait channel on every node, once.
func (c *Client) stand() {
	c.line.once.Do(func() {
		for _, n := range c.nodes {
			n.Stand(c.line.channel, nil)
		}
	})
}

// queuedLock is a plain Mutex's attempt made by a Lock call, with the
// call's place in the line: a node that refuses it queues it there.
type queuedLock struct {
	plainLock
	place node.LinePlace
}

func (q *queuedLock) share(m *Mutex, i, j int, owner, attempt string, held bool) checkedLocker {
	return q.plainLock.share(m, i, j, owner, attempt, held).(*node.Lock).Queue(&q.place)
}

// leave takes a waiter that gave up out of the lines it queued in, in the
// background (bounded by the release timeout, counted for Close), so a
// release does not spend its wake-up on it. Best effort: a line lives no
// longer than its holder's claim and a waiter's TTL.
func (q *queuedLock) leave(m *Mutex) {
	c := m.c
	if !q.place.Queued() || c.closed.Load() {
		return
	}
	for i, n := range c.nodes {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.releaseTimeout)
			defer cancel()
			for j := range m.names {
				_ = n.LeaveLine(ctx, m.keys[j][i], &q.place)
			}
		}()
	}
}
