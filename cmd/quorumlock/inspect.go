package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/quorumlock/quorumlock/internal/safetext"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

func init() {
	register(&command{
		name:     "inspect",
		summary:  "show one lock on every node (holder, hold count, TTL, fence, mode) and the verdict",
		run:      runInspect,
		synopsis: "quorumlock inspect [--json] NAME",
	})
}

func runInspect(ctx context.Context, args []string, out io.Writer) error {
	fs := flags("inspect", "show one lock on every node (holder, hold count, TTL, fence, mode) and the verdict; usage: quorumlock inspect [flags] NAME", out)
	nodes := nodesFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	name, err := parseName(fs, args)
	if err != nil {
		return err
	}
	c, err := dialNodes(*nodes)
	if err != nil {
		return err
	}
	defer c.Close()
	in, err := c.Admin().Inspect(ctx, name)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := writeJSON(out, jsonInspections([]admin.Inspection{in})[0]); err != nil {
			return err
		}
	} else {
		printInspection(out, in)
	}
	var failed []*quorum.NodeError
	for _, s := range in.Nodes {
		if !s.Answered() {
			failed = append(failed, &quorum.NodeError{Node: s.Node, Err: s.Err})
		}
	}
	if in.Verdict == admin.Unknown || in.Answered < in.Quorum {
		return untrusted(fmt.Sprintf("the verdict on %q", name), in.Answered, len(in.Nodes), in.Quorum, failed)
	}
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "quorumlock inspect: warning: %d of %d nodes did not answer; a quorum did, so the verdict holds%s\n",
			len(failed), len(in.Nodes), silentNodes(failed))
	}
	return nil
}

// parseName parses flags with one NAME argument, before or after the flags.
func parseName(fs *flag.FlagSet, args []string) (string, error) {
	if err := parse(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", fmt.Errorf("%w: give the lock's NAME (quorumlock locks lists them)", errUsage)
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if strings.TrimSpace(name) == "" {
		return "", fmt.Errorf("%w: the lock's NAME is empty (quorumlock locks lists the names)", errUsage)
	}
	if err := parse(fs, rest); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", fmt.Errorf("%w: one NAME only, got also %q", errUsage, fs.Args())
	}
	return name, nil
}

func printInspection(out io.Writer, in admin.Inspection) {
	fmt.Fprintf(out, "%s: %s\n", safetext.Quote(in.Name), verdictLine(in))
	var facts []string
	if in.TTL > 0 {
		if in.Verdict == admin.HeldByQuorum {
			facts = append(facts, "a quorum holds it for "+ttl(in.TTL)+" more without renewal")
		} else {
			facts = append(facts, "the last leftover expires in "+ttl(in.TTL))
		}
	}
	if in.Fence > 0 {
		facts = append(facts, fmt.Sprintf("fence %d", in.Fence))
	}
	if in.Mode != "" {
		facts = append(facts, "mode "+in.Mode)
	}
	if len(facts) > 0 {
		fmt.Fprintf(out, "  %s\n", strings.Join(facts, " · "))
	}
	if f := in.Forced; f != nil {
		fmt.Fprintf(out, "  %s\n", forcedLine(f))
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tOWNER\tHOLDS\tTTL\tFENCE\tMODE\t")
	for _, s := range in.Nodes {
		switch {
		case !s.Answered():
			fmt.Fprintf(tw, "%s\tno answer: %v\t\t\t\t\t\t\n", s.Node, s.Err)
		case !s.Present:
			fmt.Fprintf(tw, "%s\tabsent\t-\t-\t-\t%s\t\t\n", s.Node, orDash(fence(s.Fence)))
		default:
			state := "leftover"
			if holdsFor(s, in.Holders) {
				state = "holds"
			}
			for owner, n := range s.Holders {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", s.Node, state, safetext.Quote(owner), n, orDash(ttl(s.TTL)), orDash(fence(s.Fence)), s.Mode)
			}
		}
	}
	tw.Flush()
}

func verdictLine(in admin.Inspection) string {
	n := len(in.Nodes)
	switch in.Verdict {
	case admin.HeldByQuorum:
		return fmt.Sprintf("held by %s (an owner needs %d of %d nodes; %d answered)", holderNames(in), in.Quorum, n, in.Answered)
	case admin.MinorityOnly:
		return fmt.Sprintf("leftovers on a minority of nodes, no owner has %d of %d: they block nobody and expire with their TTL", in.Quorum, n)
	case admin.Unknown:
		return fmt.Sprintf("unknown: only %d of %d nodes answered, too few to tell", in.Answered, n)
	default:
		return fmt.Sprintf("free (%d of %d nodes answered)", in.Answered, n)
	}
}

// forcedLine says who force-unlocked a lock, when, and from where: by as
// the operator typed it (quoted when it is not plain), the place as the
// tool recorded it.
func forcedLine(f *node.Forced) string {
	line := fmt.Sprintf("force-unlocked by %s at %s", safetext.Quote(f.By), f.At.Format("2006-01-02 15:04:05 MST"))
	if f.Via != "" {
		line += " via " + safetext.Quote(f.Via)
	}
	return line
}
