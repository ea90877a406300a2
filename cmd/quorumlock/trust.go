package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/quorumlock/quorumlock/internal/safetext"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// nodeErrors flattens a joined error into its per-node errors, in order;
// other errors come back with an empty Node.
func nodeErrors(err error) []*quorum.NodeError {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*quorum.NodeError
		for _, e := range j.Unwrap() {
			out = append(out, nodeErrors(e)...)
		}
		return out
	}
	var ne *quorum.NodeError
	if errors.As(err, &ne) {
		return []*quorum.NodeError{ne}
	}
	// package admin reports a node's error with the core's type
	var me *multilock.NodeError
	if errors.As(err, &me) {
		return []*quorum.NodeError{{Node: me.Node, Err: me.Err}}
	}
	return []*quorum.NodeError{{Err: err}}
}

// silentNodes says which nodes did not answer and why, on one line:
// " (node: why; node: why)".
func silentNodes(errs []*quorum.NodeError) string {
	if len(errs) == 0 {
		return ""
	}
	parts := make([]string, len(errs))
	for i, ne := range errs {
		parts[i] = orDash(ne.Node) + ": " + nodeReason(ne.Err)
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// nodeReason is one node's error for a person: one line, without the
// library's prefix or a repeated node name.
func nodeReason(err error) string {
	if err == nil {
		return "no answer"
	}
	var ne *quorum.NodeError
	for errors.As(err, &ne) && ne.Err != nil {
		err = ne.Err
	}
	var me *multilock.NodeError
	for errors.As(err, &me) && me.Err != nil {
		err = me.Err
	}
	return message("", err.Error())
}

// majority is how many of n nodes an owner needs under the CLI's policy
// (quorum.Majority).
func majority(n int) int { return n - quorum.Majority.FailedLocksLimit(n) }

// untrusted is the exit error of an answer from fewer nodes than a quorum.
func untrusted(what string, answered, n, need int, errs []*quorum.NodeError) error {
	return &exitError{code: exitUnsure, msg: fmt.Sprintf(
		"%s cannot be trusted: only %d of %d nodes answered and a lock needs %d; a lock could be held on the nodes that did not answer%s; fix or reach those nodes and run it again",
		what, answered, n, need, silentNodes(errs))}
}

// holderNames is the holders for a person: their labels
// (admin.Inspection.Label: the label their client recorded, host:pid by
// default, or what lock --owner / quorum.WithLabel gave).
func holderNames(in admin.Inspection) string {
	labels := make([]string, len(in.Holders))
	for i, h := range in.Holders {
		labels[i] = in.Label(h)
	}
	return safetext.List(labels, ",")
}
