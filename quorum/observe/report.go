package observe

import (
	"fmt"
	"strings"
	"time"
)

// Vote is one node's part in an acquisition.
type Vote struct {
	Node    string
	Granted bool
	// Answered is false when the node did not answer before the decision
	// (it may still have answered later).
	Answered bool
	RTT      time.Duration
	// Err is the node's error, nil for a grant or a plain refusal. A grant
	// the safety gate did not count is an error too, wrapping
	// quorum.ErrNotReplicated (WAIT not acknowledged) or
	// quorum.ErrNodeRestarted (restarted or young node).
	Err error
	// Reason says in words why the node did or did not vote.
	Reason string
}

// Report says how a lease was obtained (quorum.Lease.Report): every
// node's vote, the time the acquisition took, the drift allowance and the
// validity that was left.
type Report struct {
	Name     string
	Votes    []Vote
	Elapsed  time.Duration
	Drift    time.Duration
	Validity time.Duration
	Token    int64
}

// String renders the report on one line per node.
func (r Report) String() string {
	var b strings.Builder
	granted := 0
	for _, v := range r.Votes {
		if v.Granted {
			granted++
		}
	}
	fmt.Fprintf(&b, "%s: %d/%d votes, acquired in %v, drift allowance %v, validity %v, token %d\n",
		r.Name, granted, len(r.Votes), r.Elapsed.Round(time.Microsecond), r.Drift, r.Validity.Round(time.Millisecond), r.Token)
	for _, v := range r.Votes {
		rtt := v.RTT.Round(time.Microsecond).String()
		if !v.Answered {
			rtt = "-"
		}
		fmt.Fprintf(&b, "  %-22s %-8s %s\n", v.Node, rtt, v.Reason)
	}
	return b.String()
}
