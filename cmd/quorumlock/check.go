package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

const checkSummary = "preflight check of the nodes: distinct servers (run_id), masters, persistence, maxmemory-policy, Cluster slot placement"

func init() {
	register(&command{name: "check", summary: checkSummary, run: runCheck})
}

func runCheck(ctx context.Context, args []string, out io.Writer) error {
	fs := flags("check", checkSummary, out)
	nodes := nodesFlag(fs)
	names := fs.String("names", "", "lock names (comma-separated) whose Cluster slot placement to report")
	ttl := fs.Duration("ttl", 10*time.Second, "the lock TTL your clients use (young servers are compared with it)")
	fencing := fs.Bool("fencing", true, "your clients use fencing tokens, the library's default (persistence findings get stricter); --fencing=false for clients with quorum.WithFencing(false)")
	restart := fs.Bool("restart-detection", true, "your clients use restart detection, the library's default for nodes without fsync-always AOF (persistence off is then a notice); --restart-detection=false for clients with quorum.WithRestartDetection(false)")
	wait := fs.Int("replicas", 0, "your clients use quorum.WithReplicaAck with this many replicas: nodes with fewer connected replicas are problems")
	fs.Func("wait", "renamed: use --replicas N (lock --wait is a time to wait for the lock)", func(v string) error {
		return fmt.Errorf("check --wait is now --replicas %s: the replicas your clients' quorum.WithReplicaAck asks to acknowledge (lock --wait is a time to wait for a lock)", v)
	})
	strict := fs.Bool("strict", false, "fail on warnings too, not only on problems")
	degraded := fs.Bool("allow-degraded", false, "exit 0, not 5, when the nodes that answer are a quorum but one more failure would leave none (e.g. 2 of 3)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if err := checkTTL(*ttl); err != nil {
		return err
	}
	if *wait < 0 {
		return fmt.Errorf("%w: --replicas %d is negative: give the replicas your clients wait for, or 0", errUsage, *wait)
	}
	opts := []quorum.Option{quorum.WithTTL(*ttl)}
	opts = append(opts, quorum.WithFencing(*fencing))
	if !*restart {
		opts = append(opts, quorum.WithRestartDetection(false))
	}
	if *wait > 0 {
		// Only the replica count matters to the check; a timeout that New
		// accepts.
		opts = append(opts, quorum.WithReplicaAck(*wait, time.Millisecond))
	}
	c, err := dialNodes(*nodes, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	var lockNames []string
	for _, n := range strings.Split(*names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			lockNames = append(lockNames, n)
		}
	}
	r, err := c.Admin().Check(ctx, lockNames...)
	if err != nil {
		return err
	}
	fmt.Fprint(out, r)
	refuse := admin.Problem
	if *strict {
		refuse = admin.Warning
	}
	if r.Worst() >= refuse {
		return fmt.Errorf("%d problem(s), %d warning(s): fix them before trusting the lock (see the lines above)", r.Count(admin.Problem), r.Count(admin.Warning))
	}
	if msg := survives(r, c.Admin().Nodes()); msg != "" && !*degraded {
		return &exitError{code: exitDegraded, msg: msg}
	}
	return nil
}

// survives says, when some nodes did not answer and those left are a
// quorum with nothing to spare, that one more node failure stops every
// lock; "" otherwise. A deployment that never had a node to spare (one or
// two nodes) is its owner's choice, not degraded.
func survives(r *admin.Report, nodes []string) string {
	down := map[string]bool{}
	for _, s := range r.Servers {
		if s.Err != nil {
			down[s.Node] = true
		}
	}
	var silent []*quorum.NodeError
	for _, s := range r.Servers {
		if s.Err != nil && down[s.Node] {
			silent = append(silent, &quorum.NodeError{Node: s.Node, Err: s.Err})
			down[s.Node] = false // once per node
		}
	}
	n, need := len(nodes), majority(len(nodes))
	up := n - len(silent)
	if len(silent) == 0 || up < need || up-1 >= need {
		return ""
	}
	return fmt.Sprintf("degraded: %d of %d nodes answer and a lock needs %d, so one more node failure stops every lock%s; bring the nodes back, or pass --allow-degraded to accept it",
		up, n, need, silentNodes(silent))
}
