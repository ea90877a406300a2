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
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/console"
	"github.com/quorumlock/quorumlock/drift"
	"github.com/quorumlock/quorumlock/internal/redact"
	"github.com/quorumlock/quorumlock/quorum"
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

// Exit codes. Every status the CLI returns is one of these constants (or,
// for lock, the command's own status); exitCodes lists them for help, and
// TestEveryExitCodeListed checks that none is missing there.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitUnsure: fewer nodes answered than a quorum needs, so the answer
	// (free, not held, no locks; for lock: held or not) cannot be trusted.
	exitUnsure = 3
	// exitMissing: unlock --force found the lock on no node (without
	// --missing-ok).
	exitMissing = 4
	// exitDegraded: check found every node it needs answering, but so few
	// that one more node failure leaves no quorum (without --allow-degraded).
	exitDegraded = 5
	// exitLeaseLost: lock's lease was lost while the command ran, so the
	// command was stopped. EX_SOFTWARE.
	exitLeaseLost = 70
	// exitNotObtained: lock was not obtained because another owner holds it
	// (--wait elapsed, or --try found it held). EX_TEMPFAIL: try again later.
	exitNotObtained = 75
	// exitPermanent: lock or elect was refused for a reason no retry can
	// fix (quorum.ErrPermanent: an ACL permission, a wrong password), so it
	// did not wait. EX_NOPERM.
	exitPermanent = 77
)

// exitCodes is the exit status table that quorumlock help prints.
var exitCodes = []struct {
	code    int
	meaning string
}{
	{exitOK, "success"},
	{exitFailure, "an error (said on stderr), or check found a problem"},
	{exitUsage, "usage error: a bad flag value or argument (said on stderr, with the fix)"},
	{exitUnsure, "fewer nodes answered than a quorum needs, so the answer cannot be trusted (lock: not obtained for that reason); stderr names the silent nodes"},
	{exitMissing, "unlock --force: no node holds the lock (--missing-ok makes it 0)"},
	{exitDegraded, "check: the deployment cannot survive one more node failure (--allow-degraded makes it 0)"},
	{exitLeaseLost, "lock, elect: the lease (the leadership) was lost while the command ran; the command was stopped"},
	{exitNotObtained, "lock: not obtained, another owner holds it (--wait elapsed, or --try found it held); elect: not elected within --wait"},
	{exitPermanent, "lock, elect: the nodes refused for a reason no retry can fix (a missing ACL permission, a wrong password); stderr names it; nothing waited"},
}

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
	fmt.Fprint(w, `
Global flags (before the command; a command's own flag wins):
  --nodes URLS   Redis nodes as redis:// or rediss:// URLs, comma-separated
                 (default $QUORUMLOCK_NODES, which keeps passwords out of ps;
                 no command prints a password or a token)
`)
	fmt.Fprintln(w, "\nExit status:")
	for _, e := range exitCodes {
		fmt.Fprintf(w, "  %-4d %s\n", e.code, e.meaning)
	}
	fmt.Fprintln(w, "  else lock: the command's own exit status (128+N if signal N ended it)")
}

// usageHint follows a usage error that comes before any command: the
// call's form and where the whole help is, not the help itself.
func usageHint(w io.Writer) {
	fmt.Fprintln(w, "usage: quorumlock [--nodes URLS] <command> [flags]")
	fmt.Fprintln(w, "(quorumlock help lists the commands and exit statuses; quorumlock <command> --help its flags)")
}

// synopsis is a command's one-line usage.
func synopsis(name string) string {
	if c, ok := commands[name]; ok && c.synopsis != "" {
		return c.synopsis
	}
	return "quorumlock " + name + " [flags]"
}

func main() {
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
			if err := checkNodes(globalNodes); err != nil {
				return nil, err
			}
		case strings.HasPrefix(a, "--nodes=") || strings.HasPrefix(a, "-nodes="):
			globalNodes, args = a[strings.IndexByte(a, '=')+1:], args[1:]
			if err := checkNodes(globalNodes); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unknown global flag %s: only --nodes may come before the command; put command flags after it (quorumlock <command> %s ...)", a, a)
		}
	}
	return args, nil
}

// scrubbed are run's stdout and stderr: every secret the CLI was given
// (addSecrets) is replaced by *** in what it writes, behind the redaction
// each message does itself.
var scrubbed [2]*redact.Writer

// addSecrets makes run's outputs hide secrets read after it started (a
// token file).
func addSecrets(secrets ...string) {
	for _, w := range scrubbed {
		if w != nil {
			w.Add(secrets...)
		}
	}
}

// argSecrets returns the secrets on a command line before "--": the
// passwords of --nodes values and a --token.
func argSecrets(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasVal && i+1 < len(args) {
			val = args[i+1]
		}
		switch name {
		case "nodes":
			out = append(out, redact.Secrets(val)...)
		case "token":
			out = append(out, val)
		}
	}
	return out
}

// raw is the writer under a scrubbed one: a child command writes there
// directly (its output is its own, and it keeps a terminal a terminal).
func raw(w io.Writer) io.Writer {
	if s, ok := w.(*redact.Writer); ok {
		return s.W
	}
	return w
}

func run(args []string, stdout, errOut io.Writer) int {
	scrubbed = [2]*redact.Writer{{W: stdout}, {W: errOut}}
	stdout, errOut = scrubbed[0], scrubbed[1]
	addSecrets(argSecrets(args)...)
	addSecrets(redact.Secrets(os.Getenv(quorum.EnvNodes))...)
	addSecrets(os.Getenv(console.EnvToken))
	globalNodes, stderr = "", errOut
	// go-redis logs every refused dial of its pool on stderr (its logger is
	// process-global: ~20 lines a second per dead node); a command reports
	// node failures itself, once, with the node's name and why.
	redis.SetLogger(silentRedisLog{})
	args, err := globalFlags(args)
	if err != nil {
		fmt.Fprintf(stderr, "quorumlock: %v\n", err)
		usageHint(stderr)
		return exitUsage
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "quorumlock: give a command")
		usageHint(stderr)
		return exitUsage
	}
	if args[0] == "help" {
		switch {
		case len(args) > 2:
			fmt.Fprintf(stderr, "quorumlock help: one command only, got %q\n", args[1:])
			return exitUsage
		case len(args) == 2:
			if _, ok := commands[args[1]]; !ok {
				fmt.Fprintf(stderr, "quorumlock help: unknown command %q (quorumlock help lists them)\n", args[1])
				return exitUsage
			}
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "quorumlock: unknown command %q\n", args[0])
		usageHint(stderr)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = c.run(ctx, args[1:], stdout)
	return report(c, err, stderr)
}

// report prints err on stderr, as one line "quorumlock CMD: message", and
// returns the exit status.
func report(c *command, err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if errors.Is(err, errUsage) {
		msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), errUsage.Error()), ": ")
		if msg == "" {
			msg = "bad arguments"
		}
		fmt.Fprintf(stderr, "quorumlock %s: %s\n", c.name, message(c.name, msg))
		fmt.Fprintf(stderr, "usage: %s\n(quorumlock %s --help lists the flags)\n", synopsis(c.name), c.name)
		return exitUsage
	}
	// A command that sets its own exit status (lock passes on its
	// child's); an empty message means nothing to say.
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) && ec.ExitCode() > 0 {
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(stderr, "quorumlock %s: %s\n", c.name, message(c.name, msg))
		}
		return ec.ExitCode()
	}
	fmt.Fprintf(stderr, "quorumlock %s: %s\n", c.name, message(c.name, err.Error()))
	return exitFailure
}

// message makes an error's text fit after the CLI's own "quorumlock CMD: "
// prefix: one line, and without the prefixes the libraries put in front
// ("quorumlock: ", or the command's package name such as "console: "), at
// its start or after a colon where an error was wrapped. The rule: the CLI
// prefixes, once; everything below it is stripped of theirs.
func message(cmd, msg string) string {
	msg = oneLine(msg)
	prefixes := []string{"quorumlock: "}
	if cmd != "" {
		prefixes = append(prefixes, cmd+": ")
	}
	for _, p := range prefixes {
		msg = strings.TrimPrefix(msg, p)
		msg = strings.ReplaceAll(msg, ": "+p, ": ")
		msg = strings.ReplaceAll(msg, "; "+p, "; ")
	}
	return msg
}

// oneLine joins the lines of a (joined, multi-line) error text with "; ".
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// checkTTL refuses a --ttl that no lease could live with: not positive,
// or not above its drift allowance (drift.Check, with the default factor
// the CLI's clients use).
func checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: --ttl %v: give a positive duration such as --ttl 10s", errUsage, ttl)
	}
	if ttl > quorum.MaxTTL {
		return fmt.Errorf("%w: --ttl %v is above the longest TTL, %v: a restarted node sits out for a TTL; give e.g. --ttl 30s (the watchdog renews a lock held for longer)", errUsage, ttl, quorum.MaxTTL)
	}
	if err := drift.Check(ttl, drift.DefaultFactor); err != nil {
		return fmt.Errorf("%w: --ttl %v: %s", errUsage, ttl, message("", err.Error()))
	}
	return nil
}

// flags makes a FlagSet for a subcommand that reports errors instead of
// exiting. --help prints to out (stdout); parse errors go back as errUsage.
func flags(name, summary string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("quorumlock "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "quorumlock %s: %s\n\nUsage: %s\n\nFlags:\n", name, summary, synopsis(name))
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
	// The flag package repeats a refused value whole: hide the credentials
	// of any node address among the arguments.
	msg := err.Error()
	for _, a := range args {
		msg = redact.Text(msg, a)
	}
	return fmt.Errorf("%w: %s", errUsage, msg)
}
