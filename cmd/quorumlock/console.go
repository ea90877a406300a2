package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/quorumlock/quorumlock/console"
)

func init() {
	register(&command{
		name:    "console",
		summary: "serve the web console: locks, per-node TTLs, verdicts, force-unlock (loopback unless a token is set)",
		run:     runConsole,
	})
}

func runConsole(ctx context.Context, args []string, out io.Writer) error {
	fs := flags("console", "serve the web console: locks, per-node TTLs, verdicts, force-unlock (loopback unless a token is set)", out)
	nodes := nodesFlag(fs)
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on; beyond loopback only with a token")
	token := fs.String("token", "", "require this token on every request (default $"+console.EnvToken+"); needed to listen beyond loopback")
	match := fs.String("match", "*", "glob of lock names to list")
	refresh := fs.Duration("refresh", time.Second, "how often the page refreshes (every refresh scans every node)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if err := checkPattern(*match); err != nil {
		return err
	}
	if *refresh < 100*time.Millisecond {
		return fmt.Errorf("%w: --refresh %v is below 100ms: every refresh scans every node; give e.g. --refresh 1s", errUsage, *refresh)
	}
	tok := *token
	if tok == "" {
		tok = os.Getenv(console.EnvToken)
	}
	// Check the address before dialling anything.
	if err := console.CheckListen(*listen, tok); err != nil {
		return fmt.Errorf("%w: --listen: %v", errUsage, err)
	}
	c, err := dialNodes(*nodes)
	if err != nil {
		return err
	}
	defer c.Close()
	con, err := console.New(c, console.WithToken(tok), console.WithPattern(*match), console.WithRefresh(*refresh))
	if err != nil {
		return err
	}
	ln, err := con.Listen(*listen)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + "/"
	if tok != "" {
		url += "?token=<token>   (once: the console swaps it for a cookie and drops it from the address)"
	}
	fmt.Fprintf(out, "quorumlock console on %s (%d nodes); JSON at /api/locks, health at /healthz; Ctrl-C stops it\n", url, len(c.Admin().Nodes()))
	return con.Serve(ctx, ln)
}
