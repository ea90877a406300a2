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
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	// synopsis is the one-line usage shown with a usage error, e.g.
	// "quorumlock lock [flags] NAME -- COMMAND [ARGS...]"; empty means
	// "quorumlock NAME [flags]".
	synopsis string
	// run parses its own flags from args and does the work; stdout is where
	// results go. Errors go back to main, which prints them on stderr.
	run func(ctx context.Context, args []string, stdout io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errUsage marks an error that prints its message, the command's synopsis
// and exits 2. Wrap it with what was wrong and how to fix it:
// fmt.Errorf("%w: give the lock's NAME", errUsage).
var errUsage = errors.New("usage")

// Exit codes shared by every command (lock adds its own: see lock.go).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitUnsure: fewer nodes answered than a quorum needs, so the answer
	// (free, not held, no locks) cannot be trusted.
	exitUnsure = 3
)

// stderr is where commands write warnings and progress (run sets it; tests
// capture it).
var stderr io.Writer = os.Stderr

// globalNodes is --nodes given before the subcommand; dialNodes uses it
// when the subcommand's own --nodes is empty.
var globalNodes string

func usage(w io.Writer) {
	fmt.Fprintln(w, "quorumlock: high-safety distributed locks on Redis, and the evidence for them.")
	fmt.Fprintln(w, "\nUsage: quorumlock [--nodes URLS] <command> [flags]   (quorumlock <command> --help for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, `
Global flags (before the command; a command's own flag wins):
  --nodes URLS   Redis nodes as redis:// or rediss:// URLs, comma-separated
                 (default $QUORUMLOCK_NODES)

Exit status:
  0    success
  1    an error, or check found a problem (said on stderr)
  2    usage error: a bad flag or argument (said on stderr, with the fix)
  3    locks/inspect: fewer nodes answered than a quorum needs, so the
       answer cannot be trusted (the silent nodes are named on stderr)
  %d   lock: the lock was not obtained (--wait elapsed, --try found it held)
  %d   lock: the lease was lost while the command ran; the command was stopped
  else lock: the command's own exit status (128+N if signal N ended it)
`, exitNotObtained, exitLeaseLost)
}

func main() {
	// go-redis logs every refused dial of its pool on stderr; a command
	// reports node failures itself, once, with the node's name.
	redis.SetLogger(silentRedisLog{})
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// silentRedisLog drops go-redis' internal log lines.
type silentRedisLog struct{}

func (silentRedisLog) Printf(context.Context, string, ...any) {}

// globalFlags takes the flags before the subcommand off args.
func globalFlags(args []string) ([]string, error) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		switch {
		case a == "-h" || a == "--help" || a == "-help":
			return append([]string{"help"}, args[1:]...), nil
		case a == "--nodes" || a == "-nodes":
			if len(args) < 2 {
				return nil, errors.New("--nodes needs a value: --nodes redis://host:port,redis://host:port,...")
			}
			globalNodes, args = args[1], args[2:]
		case strings.HasPrefix(a, "--nodes=") || strings.HasPrefix(a, "-nodes="):
			globalNodes, args = a[strings.IndexByte(a, '=')+1:], args[1:]
		default:
			return nil, fmt.Errorf("unknown global flag %s: only --nodes may come before the command; put command flags after it (quorumlock <command> %s ...)", a, a)
		}
	}
	return args, nil
}

func run(args []string, stdout, errOut io.Writer) int {
	globalNodes, stderr = "", errOut
	args, err := globalFlags(args)
	if err != nil {
		fmt.Fprintf(stderr, "quorumlock: %v\n\n", err)
		usage(stderr)
		return exitUsage
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "quorumlock: give a command")
		fmt.Fprintln(stderr)
		usage(stderr)
		return exitUsage
	}
	if args[0] == "help" {
		if len(args) > 1 {
			if _, ok := commands[args[1]]; ok {
				return run([]string{args[1], "--help"}, stdout, stderr)
			}
		}
		usage(stdout)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "quorumlock: unknown command %q (quorumlock help lists them)\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = c.run(ctx, args[1:], stdout)
	return report(c, err, stderr)
}

// report prints err on stderr and returns the exit status.
func report(c *command, err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if errors.Is(err, errUsage) {
		msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), errUsage.Error()), ": ")
		if msg == "" {
			msg = "bad arguments"
		}
		fmt.Fprintf(stderr, "quorumlock %s: %s\n", c.name, msg)
		syn := c.synopsis
		if syn == "" {
			syn = "quorumlock " + c.name + " [flags]"
		}
		fmt.Fprintf(stderr, "usage: %s\n(quorumlock %s --help lists the flags)\n", syn, c.name)
		return exitUsage
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
	return exitFailure
}

// flags makes a FlagSet for a subcommand that reports errors instead of
// exiting. --help prints to out (stdout); parse errors go back as errUsage.
func flags(name, summary string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("quorumlock "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "quorumlock %s: %s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags. --help prints the command's help and returns
// flag.ErrHelp; a bad flag returns errUsage with the flag package's
// message, and nothing is printed (main prints it on stderr).
func parse(fs *flag.FlagSet, args []string) error {
	out, help := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = help
	if err == nil {
		return nil
	}
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return err
	}
	return fmt.Errorf("%w: %v", errUsage, err)
}
