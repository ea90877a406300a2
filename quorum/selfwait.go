package quorum

import (
	"context"
	"log/slog"
	"time"
)

// selfWait is a waiting Lock's watch for the mistake of waiting on itself:
// the same goroutine (or code path) calling Lock on a handle whose lease it
// still holds, without WithOwner, waits until that lease ends, which with
// the watchdog is never.
type selfWait struct {
	start  time.Time
	warned bool
}

// check logs once at Warn (WithLogger) when the Lock has waited longer than
// the TTL while a lease of the same handle is held by this client.
func (m *Mutex) checkSelfWait(ctx context.Context, w *selfWait) {
	l := m.c.cfg.logger
	if l == nil || w.warned {
		return
	}
	if w.start.IsZero() {
		w.start = time.Now()
		return
	}
	waited := time.Since(w.start)
	if waited <= m.ttl() {
		return
	}
	m.c.leaseMu.Lock()
	var mine []*Lease
	for ls := range m.c.leases {
		if ls.m == m {
			mine = append(mine, ls)
		}
	}
	m.c.leaseMu.Unlock()
	for _, ls := range mine {
		if ls.Err() == nil {
			w.warned = true
			l.LogAttrs(ctx, slog.LevelWarn, "quorumlock: Lock has waited longer than the TTL for a lock this client already holds through the same handle; "+
				"if the holder is this goroutine it waits for itself: unlock first, or use WithOwner for a reentrant lock",
				slog.String("lock", m.name()), slog.Duration("waited", waited), slog.Duration("ttl", m.ttl()))
			return
		}
	}
}

// warnWakeLost logs at Warn (WithLogger) the nodes where a release's
// wake-up message was refused: the lock was released, but its waiters
// learn it only at their next retry.
func (c *Client) warnWakeLost() {
	l := c.cfg.logger
	for _, n := range c.nodes {
		if k := n.WakeLost(); k > 0 && l != nil {
			l.Warn("quorumlock: released, but the Redis user may not PUBLISH the wake-up message; waiters notice at their next retry: grant it, ACL SETUSER <user> +publish",
				"node", n.Name(), "releases", k)
		}
	}
}
