package matrix

import (
	"time"

	"github.com/quorumlock/quorumlock/chaos"
)

// crashMinorityPlan is crash-restart-minority: again and again, while a
// worker holds the lock, a minority of the lock nodes is killed and
// restarted at once without persistence, and the holder works two leases
// more with its lease renewed by the watchdog.
func crashMinorityPlan(c *cell) (plan, error) {
	g := &holdGate{}
	nodes := c.lockNodes()
	p := c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
		return c.holdingStrike(g, 2*c.timing.Lease, 0, crashes(nodes[:minority(len(nodes))], true)...)
	})
	p.watchdog = true
	return p, nil
}
