// Command quorumlock-lab is quorumlock's chaos lab: the matrix of lock
// modes × fault scenarios on local redis-server processes, the same cells
// in the deterministic simulation (--sim), and the deliberate bugs that
// both must catch (--mutants). It lives in the harness's module so the
// gate CLI (cmd/quorumlock) stays small and installable; run it from a
// clone, through the workspace:
//
//	go run ./jepsen-like/cmd/quorumlock-lab chaos --quick --json chaos.json --html chaos.html
//	go run ./jepsen-like/cmd/quorumlock-lab chaos --list
//	go run ./jepsen-like/cmd/quorumlock-lab chaos --mutants --ci --sim
//
// Results go to stdout, progress and errors to stderr. Exit status: 0 every
// cell held what it is expected to hold (every mutant killed), 1 a mode
// expected safe showed a violation, a cell could not run or a mutant
// survived, 2 a usage error.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// command is one subcommand.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errUsage marks an error that is the caller's mistake: exit 2.
var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: quorumlock-lab <command> [flags]   (quorumlock-lab <command> --help for its flags)")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}

// quiet drops go-redis' log lines: the lab's clients see refused dials by
// design (partitions, crashes), and every cell reports what it saw.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quiet{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs one command and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 0 {
			usage(stderr)
			return 2
		}
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "quorumlock-lab: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := c.run(ctx, args[1:], stdout)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "quorumlock-lab %s: %s\n(quorumlock-lab %s --help lists the flags)\n", c.name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "), c.name)
		return 2
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "quorumlock-lab %s: interrupted\n", c.name)
		return 1
	}
	fmt.Fprintf(stderr, "quorumlock-lab %s: %v\n", c.name, err)
	return 1
}

// flags makes a subcommand's FlagSet: --help prints to out, and a parse
// error comes back from parse as errUsage.
func flags(name, summary string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("quorumlock-lab "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "quorumlock-lab %s: %s\n\nusage: quorumlock-lab %s [flags]\n\nFlags:\n", name, summary, name)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args. The FlagSet writes its help, after an error too,
// to a buffer that reaches the command's output only for --help; a bad
// flag comes back as errUsage with the flag package's message.
func parse(fs *flag.FlagSet, args []string) error {
	out, buf := fs.Output(), new(bytes.Buffer)
	fs.SetOutput(buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = out.Write(buf.Bytes())
		return err
	} else if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}
