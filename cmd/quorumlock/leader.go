package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/quorumlock/quorumlock/internal/safetext"
	"github.com/quorumlock/quorumlock/quorum"
)

const leaderSummary = "show the leader of an election (its value, term and time left); --watch follows changes"

func init() {
	register(&command{name: "leader", summary: leaderSummary, run: runLeader,
		synopsis: "quorumlock leader [--watch] NAME"})
}

func runLeader(ctx context.Context, args []string, out io.Writer) error {
	fs := flags("leader", leaderSummary+`.

Prints one line: the leader's value, term number and time left, or "no
leader". Exit status 0 either way; 3 when fewer than a quorum of nodes
answered (the leader is unknown); 2 for usage errors; 1 for other errors.
With --watch it prints a line per change (each new term, each new value,
each end of a term without successor yet), in term order, until
interrupted`, out)
	nodes := nodesFlag(fs)
	watch := fs.Bool("watch", false, "print every leadership change until interrupted")
	name, err := parseName(fs, args)
	if err != nil {
		return err
	}
	c, err := dialNodes(*nodes)
	if err != nil {
		return err
	}
	defer c.Close()
	e, err := c.Election(name)
	if err != nil {
		return err
	}
	if *watch {
		for info := range e.Observe(ctx) {
			fmt.Fprintf(out, "%s %s\n", time.Now().Format("15:04:05.000"), describeLeader(name, info, info == quorum.LeaderInfo{}))
		}
		return nil // interrupted (or the client closed)
	}
	info, err := e.Leader(ctx)
	switch {
	case errors.Is(err, quorum.ErrNoLeader):
		fmt.Fprintln(out, describeLeader(name, info, true))
		return nil
	case errors.Is(err, quorum.ErrLeaderUnknown):
		var silent []*quorum.NodeError
		for _, ne := range nodeErrors(err) {
			if ne.Node != "" {
				silent = append(silent, ne)
			}
		}
		return &exitError{code: exitUnsure, msg: err.Error() + silentNodes(silent)}
	case err != nil:
		return err
	}
	fmt.Fprintln(out, describeLeader(name, info, false))
	return nil
}

func describeLeader(name string, info quorum.LeaderInfo, none bool) string {
	if none {
		return fmt.Sprintf("%s: no leader", safetext.Quote(name))
	}
	return fmt.Sprintf("%s: leader %q, term %d, %v left", safetext.Quote(name), info.Value, info.Token, info.TimeLeft.Round(time.Millisecond))
}
