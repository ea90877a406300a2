package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"strings"
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
	token := fs.String("token", "", "require this token on every request (default $"+console.EnvToken+"); needed to listen beyond loopback, with at least 16 characters. A flag shows in ps: prefer --token-file or $"+console.EnvToken)
	tokenFile := fs.String("token-file", "", "read the token from this `FILE` (its first line), which keeps it out of ps")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate `FILE` (PEM; with --tls-key); the session cookie is then Secure")
	tlsKey := fs.String("tls-key", "", "the private key `FILE` (PEM) of --tls-cert")
	match := fs.String("match", "*", "glob of lock names the console shows and may force-unlock; others are refused")
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
	tok, err := consoleToken(*token, *tokenFile)
	if err != nil {
		return err
	}
	var opts []console.Option
	scheme := "http"
	if *tlsCert != "" || *tlsKey != "" {
		if *tlsCert == "" || *tlsKey == "" {
			return fmt.Errorf("%w: --tls-cert and --tls-key go together: give both files", errUsage)
		}
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fmt.Errorf("%w: --tls-cert/--tls-key: %v", errUsage, err)
		}
		opts = append(opts, console.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
		scheme = "https"
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
	opts = append(opts, console.WithToken(tok), console.WithPattern(*match), console.WithRefresh(*refresh))
	con, err := console.New(c, opts...)
	if err != nil {
		return err
	}
	ln, err := con.Listen(*listen)
	if err != nil {
		return err
	}
	url := scheme + "://" + ln.Addr().String() + "/"
	if tok != "" {
		url += "?token=<token>   (once: the console swaps it for a cookie and drops it from the address)"
	}
	fmt.Fprintf(out, "quorumlock console on %s (%d nodes); JSON at /api/locks, health at /healthz; Ctrl-C stops it\n", url, len(c.Admin().Nodes()))
	if scheme == "http" && tok != "" && console.CheckListen(*listen, "") != nil {
		fmt.Fprintln(stderr, "quorumlock console: warning: plain HTTP beyond loopback: the token and the session cookie cross the network in the clear; give --tls-cert and --tls-key")
	}
	return con.Serve(ctx, ln)
}

// consoleToken is the console's token: --token, else the first line of
// --token-file, else $QUORUMLOCK_CONSOLE_TOKEN. A token read from a file is
// added to the secrets the CLI's outputs hide.
func consoleToken(flagTok, file string) (string, error) {
	switch {
	case flagTok != "" && file != "":
		return "", fmt.Errorf("%w: --token and --token-file contradict each other: give one (--token-file keeps the token out of ps)", errUsage)
	case flagTok != "":
		return flagTok, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%w: --token-file: %v", errUsage, err)
		}
		tok, _, _ := strings.Cut(string(b), "\n")
		tok = strings.TrimSpace(tok)
		if tok == "" {
			return "", fmt.Errorf("%w: --token-file %s is empty: put the token on its first line", errUsage, file)
		}
		addSecrets(tok)
		return tok, nil
	}
	return os.Getenv(console.EnvToken), nil
}
