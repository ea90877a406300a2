package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/quorumlock/quorumlock/internal/safetext"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

func init() {
	register(&command{
		name:     "unlock",
		summary:  "force-unlock a lock on every node (needs --force; recorded with who and when)",
		run:      runUnlock,
		synopsis: "quorumlock unlock --force [--by WHO] [--missing-ok] NAME",
	})
}

func runUnlock(ctx context.Context, args []string, out io.Writer) error {
	fs := flags("unlock", "force-unlock a lock on every node, whoever holds it, and wake its waiters; usage: quorumlock unlock --force [--by WHO] [--missing-ok] NAME", out)
	nodes := nodesFlag(fs)
	force := fs.Bool("force", false, "confirm the force-unlock: a holder that is still running is no longer protected")
	by := fs.String("by", "", "who does it, recorded next to the lock for 24h (default user@host)")
	missingOK := fs.Bool("missing-ok", false, "exit 0, not 4, when no node holds the lock (for scripts that clear a lock that may be gone)")
	name, err := parseName(fs, args)
	if err != nil {
		return err
	}
	if !*force {
		return fmt.Errorf("%w: refusing to force-unlock %q without --force: a holder that is still running loses its protection; look first with quorumlock inspect %s, then add --force", errUsage, name, name)
	}
	who := strings.TrimSpace(*by)
	if who == "" {
		who = operator()
	}
	if err := admin.CheckBy(who); err != nil {
		return fmt.Errorf("%w: --by: %s", errUsage, message("unlock", err.Error()))
	}
	c, err := dialNodes(*nodes)
	if err != nil {
		return err
	}
	defer c.Close()
	before, _ := c.Admin().Inspect(ctx, name)
	n, err := c.Admin().ForceUnlockVia(ctx, name, who, "cli")
	total := len(c.Admin().Nodes())
	// Nothing removed and every node answered: no result for stdout (the
	// nodes record nothing either), only the note below on stderr.
	if n > 0 || err != nil {
		if before.Verdict == admin.HeldByQuorum {
			if ids := strings.Join(before.Holders, ", "); ids != holderNames(before) {
				fmt.Fprintf(out, "%s was held by %s (%s)\n", safetext.Quote(name), holderNames(before), safetext.List(before.Holders, ", "))
			} else {
				fmt.Fprintf(out, "%s was held by %s\n", safetext.Quote(name), holderNames(before))
			}
		} else {
			fmt.Fprintf(out, "%s was %s\n", safetext.Quote(name), before.Verdict)
		}
		fmt.Fprintf(out, "force-unlocked %s: removed on %d of %d nodes, waiters woken; recorded: by %s via cli\n", safetext.Quote(name), n, total, safetext.Quote(who))
	}
	if err != nil {
		failed := nodeErrors(err)
		if answered := total - len(failed); answered < majority(total) {
			return untrusted(fmt.Sprintf("the force-unlock of %q", name), answered, total, majority(total), failed)
		}
		return fmt.Errorf("%d of %d nodes did not take the force-unlock%s; run it again when they answer", len(failed), total, silentNodes(failed))
	}
	if n == 0 && !*missingOK {
		return &exitError{code: exitMissing, msg: fmt.Sprintf("no node holds %q, nothing was removed: check the name (quorumlock locks lists them), or add --missing-ok when a missing lock is fine", name)}
	}
	if n == 0 {
		fmt.Fprintf(stderr, "quorumlock unlock: no node holds %q, nothing was removed\n", name)
	}
	return nil
}

// operator is user@host of whoever runs the CLI.
func operator() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		name += "@" + h
	}
	return name
}
