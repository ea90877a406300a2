package quorum

import (
	"github.com/quorumlock/quorumlock/drift"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// Report describes how the lease was obtained: every node's vote, the time
// the acquisition took, the drift allowance and the validity that was left
// (for a MutexAll of several names, the votes are the members').
func (l *Lease) Report() observe.Report {
	r := observe.Report{Name: l.name(), Elapsed: l.ml.Elapsed(), Drift: drift.Allowance(l.ttl, l.m.c.cfg.factor), Token: l.Token()}
	r.Validity = max(l.ttl-r.Elapsed-r.Drift, 0)
	for _, o := range l.ml.Outcomes() {
		r.Votes = append(r.Votes, observe.Vote{Node: o.Node, Granted: o.Granted, Answered: o.Answered, RTT: o.RTT, Err: o.Err, Reason: voteReason(o)})
	}
	return r
}
