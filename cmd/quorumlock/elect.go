package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/quorumlock/quorumlock/quorum"
)

const electSummary = "run a command only while this process is the elected leader"

func init() {
	register(&command{name: "elect", summary: electSummary, run: runElect,
		synopsis: "quorumlock elect [flags] NAME [--] COMMAND [ARGS...]"})
}

func electUsage(fs *flag.FlagSet) func() {
	return func() {
		fmt.Fprintf(fs.Output(), `quorumlock elect: %s.

Usage: quorumlock elect [flags] NAME [--] COMMAND [ARGS...]

Campaigns in the election NAME on the quorum of --nodes (waiting, woken at
once when the leader resigns), publishes --value as the leader's value, runs
COMMAND while leader, and resigns when it exits. If leadership is lost (the
term could not be renewed on a quorum in time, or was forced away) the
command is stopped: SIGTERM to its process group, SIGKILL after --grace.
SIGINT or SIGTERM to quorumlock stop it the same way.

The command sees QUORUMLOCK_ELECTION (the name), QUORUMLOCK_TERM (the term
number: a fencing token, higher for every new leader; pass it with every
write) and QUORUMLOCK_VALUE, but not $QUORUMLOCK_NODES or
$QUORUMLOCK_CONSOLE_TOKEN (secrets) nor an outer lock's QUORUMLOCK_*
values. quorumlock leader NAME shows the leader.

Exit status: the command's (128+N if a signal N ended it); %d if --wait
elapsed before this process was elected; %d if the nodes refused for a
reason no retry can fix (a missing ACL permission, a wrong password); %d if
leadership was lost and the command stopped; 2 for usage errors; 1 for
other errors.

Flags:
`, electSummary, exitNotObtained, exitPermanent, exitLeaseLost)
		fs.PrintDefaults()
	}
}

func runElect(ctx context.Context, args []string, out io.Writer) error {
	fs := flags("elect", electSummary, out)
	fs.Usage = electUsage(fs)
	nodes := nodesFlag(fs)
	value := fs.String("value", "", "the leader's value while this process leads, as quorumlock leader shows it (default host:pid)")
	ttl := fs.Duration("ttl", 10*time.Second, "term TTL: renewed every TTL/3; a leader that dies is replaced within about one TTL, a lost term is noticed within one TTL")
	wait := fs.Duration("wait", 0, "give up (exit 75) if not elected within this long; 0 waits for ever")
	grace := fs.Duration("grace", 5*time.Second, "time between SIGTERM and SIGKILL when the command must stop")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: give the election's NAME and a COMMAND, e.g. quorumlock elect scheduler -- ./scheduler", errUsage)
	}
	name := fs.Arg(0)
	if err := parse(fs, fs.Args()[1:]); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return fmt.Errorf("%w: give a COMMAND to run while leader of %q: quorumlock elect %s -- COMMAND [ARGS...]", errUsage, name, name)
	}
	if *wait < 0 {
		return fmt.Errorf("%w: --wait %v is negative: give a positive duration such as --wait 30s, or 0 to wait for ever", errUsage, *wait)
	}
	if *grace < 0 {
		return fmt.Errorf("%w: --grace %v is negative: give a positive duration such as --grace 5s", errUsage, *grace)
	}
	if err := checkTTL(*ttl); err != nil {
		return err
	}
	if *value == "" {
		host, _ := os.Hostname()
		*value = host + ":" + strconv.Itoa(os.Getpid())
	}

	c, err := dialNodes(*nodes, quorum.WithTTL(*ttl), quorum.WithLabel(*value))
	if err != nil {
		return err
	}
	defer c.Close()
	e, err := c.Election(name)
	if err != nil {
		return err
	}
	term, err := campaign(ctx, e, name, *value, *wait)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "quorumlock elect: leader of %q, term %d\n", name, term.Token())
	resign := func() error { return term.Unlock(context.WithoutCancel(ctx)) }

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, raw(out), os.Stderr
	cmd.Env = childEnv("QUORUMLOCK_ELECTION="+name,
		"QUORUMLOCK_TERM="+strconv.FormatInt(term.Token(), 10), "QUORUMLOCK_VALUE="+*value)
	// Its own process group, so stopping it reaches its children; it dies
	// with us, since without us nobody renews the term.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return errors.Join(fmt.Errorf("start %s: %w", argv[0], err), resign())
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var waitErr, why error
	select {
	case waitErr = <-exited:
	case <-term.Done():
		why = context.Cause(term.Context())
		fmt.Fprintf(stderr, "quorumlock elect: leadership of %q lost (%s); stopping the command\n", name, message("elect", why.Error()))
		waitErr = stop(cmd, exited, *grace)
	case <-ctx.Done():
		why = context.Cause(ctx) // the signal
		waitErr = stop(cmd, exited, *grace)
	}
	rerr := resign()
	if why == nil && errors.Is(rerr, quorum.ErrLeaseLost) {
		why = rerr // it finished, but leadership had been lost before
	}
	switch {
	case why != nil && errors.Is(why, quorum.ErrLeaseLost):
		return &exitError{code: exitLeaseLost, msg: fmt.Sprintf("leadership of %q was lost while the command ran (term %d): %v", name, term.Token(), why)}
	case why != nil:
		return &exitError{code: exitCode(waitErr, 130), msg: fmt.Sprintf("%v: the command was stopped", why)}
	}
	if rerr != nil {
		fmt.Fprintf(stderr, "quorumlock elect: resign %q: %v (the term expires by its TTL)\n", name, rerr)
	}
	if exitCode(waitErr, exitFailure) != 0 {
		return &exitError{code: exitCode(waitErr, exitFailure)}
	}
	return nil
}

// campaign waits to be elected in e, the election called name (at most
// wait when positive).
func campaign(ctx context.Context, e *quorum.Election, name, value string, wait time.Duration) (*quorum.Term, error) {
	wctx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	t, err := e.Campaign(wctx, value)
	if err == nil {
		return t, nil
	}
	if errors.Is(err, quorum.ErrPermanent) {
		return nil, &exitError{code: exitPermanent, msg: message("elect", err.Error())}
	}
	if ctx.Err() == nil && errors.Is(err, quorum.ErrNotObtained) && wctx.Err() != nil {
		return nil, &exitError{code: exitNotObtained, msg: fmt.Sprintf("not elected leader of %q within %v: %v", name, wait, err)}
	}
	return nil, err
}
