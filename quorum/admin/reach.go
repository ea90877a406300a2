package admin

import (
	"fmt"
	"strings"
)

// reachFinding is the preflight check's verdict on reachability: when the
// nodes that answered are fewer than a quorum, no lock can be obtained (and
// no answer about one trusted), which a deploy gate must refuse. A Cluster
// node counts as unreachable when any of its masters could not be checked.
// It returns false when enough nodes answered.
func (t *Tools) reachFinding(r *Report) (Finding, bool) {
	n := len(t.nodes)
	down := map[string]bool{}
	for _, s := range r.Servers {
		if s.Err != nil {
			down[s.Node] = true
		}
	}
	need := n - t.cfg.Policy.FailedLocksLimit(n)
	if n-len(down) >= need {
		return Finding{}, false
	}
	var names []string
	for _, nd := range t.nodes {
		if down[nd.Name()] {
			names = append(names, nd.Name())
		}
	}
	return Finding{Severity: Problem, Nodes: names, Message: fmt.Sprintf(
		"only %d of %d nodes answered and a lock needs %d: no lock can be obtained; make %s reachable (running, listening on that address, not firewalled) before relying on the lock",
		n-len(down), n, need, strings.Join(names, ", "))}, true
}
