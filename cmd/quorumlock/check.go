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
	restart := fs.Bool("restart-detection", true, "your clients use restart detection, the library's default for nodes without fsync-always AOF (persistence off is then a notice); --restart-detection=false for clients with quorum.WithoutRestartDetection()")
	wait := fs.Int("replicas", 0, "your clients use quorum.WithReplicaAck with this many replicas: nodes with fewer connected replicas are problems")
	fs.Func("wait", "renamed: use --replicas N (lock --wait is a time to wait for the lock)", func(v string) error {
		return fmt.Errorf("check --wait is now --replicas %s: the replicas your clients' quorum.WithReplicaAck asks to acknowledge (lock --wait is a time to wait for a lock)", v)
	})
	strict := fs.Bool("strict", false, "fail on warnings too, not only on problems")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	opts := []quorum.Option{quorum.WithTTL(*ttl)}
	opts = append(opts, quorum.WithFencing(*fencing))
	if !*restart {
		opts = append(opts, quorum.WithoutRestartDetection())
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
	return nil
}
