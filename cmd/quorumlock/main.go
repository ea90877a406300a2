package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	// run parses its own flags from args and does the work; stdout is where
	// results go.
	run func(ctx context.Context, args []string, stdout io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errUsage marks an error that should print usage and exit 2.
var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprintln(w, "quorumlock: high-safety distributed locks on Redis, and the evidence for them.")
	fmt.Fprintln(w, "\nUsage: quorumlock <command> [flags]   (quorumlock <command> --help for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "quorumlock: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.run(ctx, args[1:], stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, errUsage) {
			return 2
		}
		// A command that sets its own exit status (lock passes on its
		// child's); an empty message means nothing to say.
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) && ec.ExitCode() > 0 {
			if msg := err.Error(); msg != "" {
				fmt.Fprintf(stderr, "quorumlock %s: %s\n", c.name, msg)
			}
			return ec.ExitCode()
		}
		fmt.Fprintf(stderr, "quorumlock %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

// flags makes a FlagSet for a subcommand that reports errors instead of exiting.
func flags(name, summary string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("quorumlock "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "quorumlock %s: %s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags, mapping parse errors to errUsage.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}
