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
	"strings"
	"syscall"
	"time"

	"github.com/quorumlock/quorumlock/console"
	"github.com/quorumlock/quorumlock/quorum"
)

const lockSummary = "run a command while holding a lock (the flock(1) of distributed systems)"

func init() {
	register(&command{name: "lock", summary: lockSummary, run: runLock,
		synopsis: "quorumlock lock [flags] NAME [--] COMMAND [ARGS...]"})
}

// exitError ends the CLI with a given exit code; main prints its message
// unless it is empty.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

func lockUsage(fs *flag.FlagSet) func() {
	return func() {
		fmt.Fprintf(fs.Output(), `quorumlock lock: %s.

Usage: quorumlock lock [flags] NAME [--] COMMAND [ARGS...]

Waits for the lock NAME on the quorum of --nodes, runs COMMAND with stdin,
stdout and stderr passed through, keeps the lock renewed (a watchdog every
TTL/3) while it runs, and unlocks when it exits. If the lease is lost (a
quorum could not be renewed in time, or says the lock is no longer held)
the command is stopped: SIGTERM to its process group, SIGKILL after
--grace. SIGINT or SIGTERM to quorumlock stop the command the same way.

The command sees QUORUMLOCK_LOCK (the name) and, with --fencing,
QUORUMLOCK_TOKEN (a fencing token that increases with every holder: pass it
to the resource so it can refuse a stale holder's writes). It does not see
$QUORUMLOCK_NODES or $QUORUMLOCK_CONSOLE_TOKEN (secrets), nor an outer
lock's or election's QUORUMLOCK_* values: a quorumlock it runs needs its own
--nodes.

While it waits and fewer nodes answer than a lock needs, it says so on
stderr at once, and again every few seconds, with each silent node and why;
and it says when they answer again.

Exit status: the command's (128+N if a signal N ended it); %d if the lock
was not obtained because another owner holds it (--wait elapsed, or --try
found it held); %d if it was not obtained because fewer nodes answered
than a lock needs; %d if the nodes refused for a reason no retry can fix
(a missing ACL permission, a wrong password: it does not wait then); %d if
the lease was lost and the command stopped; %d for usage errors; %d for
other errors.

Flags:
`, lockSummary, exitNotObtained, exitUnsure, exitPermanent, exitLeaseLost, exitUsage, exitFailure)
		fs.PrintDefaults()
	}
}

func runLock(ctx context.Context, args []string, out io.Writer) error {
	fs := flags("lock", lockSummary, out)
	fs.Usage = lockUsage(fs)
	nodes := nodesFlag(fs)
	ttl := fs.Duration("ttl", 10*time.Second, "lock TTL; the watchdog renews every TTL/3, and a lost lease is noticed within one TTL")
	wait := fs.Duration("wait", 0, "give up (exit 75) if the lock is not obtained within this long; 0 waits for ever")
	try := fs.Bool("try", false, "do not wait: exit 75 at once if the lock is held")
	grace := fs.Duration("grace", 5*time.Second, "time between SIGTERM and SIGKILL when the command must stop")
	fencing := fs.Bool("fencing", false, "take a fencing token and pass it to the command as QUORUMLOCK_TOKEN")
	owner := fs.String("owner", "", "who holds the lock, as locks, inspect and the console show it (default host:pid); a label only: a unique id is still added, so two commands with one --owner never share the lock")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: give the lock's NAME and a COMMAND, e.g. quorumlock lock nightly-report -- ./report.sh", errUsage)
	}
	name := fs.Arg(0)
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%w: the lock's NAME is empty: give one, e.g. quorumlock lock nightly-report -- ./report.sh", errUsage)
	}
	// Flags may also follow NAME; "--" ends them.
	if err := parse(fs, fs.Args()[1:]); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return fmt.Errorf("%w: give a COMMAND to run while holding %q: quorumlock lock %s -- COMMAND [ARGS...]", errUsage, name, name)
	}
	if err := checkTTL(*ttl); err != nil {
		return err
	}
	if *wait < 0 {
		return fmt.Errorf("%w: --wait %v is negative: give a positive duration such as --wait 30s, or 0 to wait for ever", errUsage, *wait)
	}
	if *grace < 0 {
		return fmt.Errorf("%w: --grace %v is negative: give a positive duration such as --grace 5s", errUsage, *grace)
	}
	if *try && *wait > 0 {
		return fmt.Errorf("%w: --try and --wait %v contradict each other: --try does not wait; give one of them", errUsage, *wait)
	}

	// lock --try makes one attempt: the watch only tells why it failed.
	var watchOut io.Writer = stderr
	if *try {
		watchOut = nil
	}
	watch := newNodeWatch(name, watchOut)
	opts := []quorum.Option{quorum.WithTTL(*ttl), quorum.WithObserver(watch)}
	if *owner != "" {
		opts = append(opts, quorum.WithLabel(*owner))
	}
	// Without --fencing the command gets no token, so the CLI saves the
	// round trip that takes one (the library's default is on).
	opts = append(opts, quorum.WithFencing(*fencing))
	c, err := dialNodes(*nodes, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	watch.setNodes(c.Admin().Nodes())
	m, err := c.Mutex(name)
	if err != nil {
		// A name the library refuses (too long, an election's): the
		// user's to change.
		return fmt.Errorf("%w: %s", errUsage, message("lock", err.Error()))
	}

	lease, err := acquire(ctx, m, name, *wait, *try, watch)
	if err != nil {
		return err
	}
	started := time.Now()
	// Unlock however the command ends, on a context that outlives a
	// cancelled caller (Unlock bounds its own calls).
	unlock := func() error { return lease.Unlock(context.WithoutCancel(ctx)) }

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, raw(out), os.Stderr
	cmd.Env = childEnv("QUORUMLOCK_LOCK=" + name)
	if *fencing {
		cmd.Env = append(cmd.Env, "QUORUMLOCK_TOKEN="+strconv.FormatInt(lease.Token(), 10))
	}
	// Its own process group, so stopping it reaches whatever it started (a
	// shell's children); and it dies with us, since without us nobody
	// renews the lock.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return errors.Join(fmt.Errorf("start %s: %w", argv[0], err), unlock())
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var (
		waitErr error
		why     error // why we stopped the command; nil if it exited by itself
	)
	select {
	case waitErr = <-exited:
	case <-lease.Done():
		why = context.Cause(lease.Context())
		if f := forcedSince(c, name, started); f != "" {
			why = fmt.Errorf("%w: %s", why, f)
		}
		fmt.Fprintf(stderr, "quorumlock lock: lease on %q lost (%s); stopping the command\n", name, message("lock", why.Error()))
		waitErr = stop(cmd, exited, *grace)
	case <-ctx.Done():
		why = context.Cause(ctx) // the signal
		waitErr = stop(cmd, exited, *grace)
	}
	uerr := unlock()
	if why == nil && errors.Is(uerr, quorum.ErrLeaseLost) {
		// The command finished, but the lease had been lost before: it may
		// have run unprotected at the end.
		why = uerr
	}
	switch {
	case why != nil && errors.Is(why, quorum.ErrLeaseLost), why != nil && errors.Is(why, quorum.ErrLeaseExpired):
		return &exitError{code: exitLeaseLost, msg: fmt.Sprintf("the lease on %q was lost while the command ran: %v", name, why)}
	case why != nil:
		return &exitError{code: exitCode(waitErr, 130), msg: fmt.Sprintf("%v: the command was stopped", why)}
	}
	if uerr != nil {
		fmt.Fprintf(stderr, "quorumlock lock: unlock %q: %s (the lock expires by its TTL)\n", name, message("lock", uerr.Error()))
	}
	if exitCode(waitErr, exitFailure) != 0 {
		// The command's own status, passed on.
		return &exitError{code: exitCode(waitErr, exitFailure)}
	}
	return nil
}

// childEnv is the environment of lock's and elect's command: ours without
// the secrets the CLI reads ($QUORUMLOCK_NODES with its passwords, the
// console's token) and without what a lock or election of ours hands its
// command (an outer lock's token must not pass for this one's), plus set.
func childEnv(set ...string) []string {
	drop := map[string]bool{
		quorum.EnvNodes: true, console.EnvToken: true,
		"QUORUMLOCK_LOCK": true, "QUORUMLOCK_TOKEN": true,
		"QUORUMLOCK_ELECTION": true, "QUORUMLOCK_TERM": true, "QUORUMLOCK_VALUE": true,
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// acquire waits for the lock (at most wait when positive), or tries once.
// A lock not obtained exits 3 when too few nodes answered to tell, 75 when
// another owner holds it (watch tells which).
func acquire(ctx context.Context, m *quorum.Mutex, name string, wait time.Duration, try bool, watch *nodeWatch) (*quorum.Lease, error) {
	var (
		lease *quorum.Lease
		err   error
	)
	switch {
	case try:
		lease, err = m.TryLock(ctx)
	case wait > 0:
		wctx, cancel := context.WithTimeout(ctx, wait)
		lease, err = m.Lock(wctx)
		cancel()
	default:
		lease, err = m.Lock(ctx)
	}
	if err == nil {
		return lease, nil
	}
	if errors.Is(err, quorum.ErrPermanent) {
		return nil, &exitError{code: exitPermanent, msg: message("lock", err.Error())}
	}
	if ctx.Err() == nil && errors.Is(err, quorum.ErrNotObtained) {
		how := "within " + wait.String()
		if try {
			how = "at once (--try)"
		}
		if why := watch.unsure(); why != "" {
			return nil, &exitError{code: exitUnsure, msg: fmt.Sprintf("lock %q not obtained %s: %s; make the nodes reachable and run it again", name, how, why)}
		}
		return nil, &exitError{code: exitNotObtained, msg: fmt.Sprintf("lock %q not obtained %s: %s", name, how, watch.holders())}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted while waiting for %q (%v)", name, context.Cause(ctx))
	}
	return nil, err
}

// forcedSince says who force-unlocked name and when, if a force-unlock is
// recorded since the lease began; "" otherwise.
func forcedSince(c *quorum.Client, name string, since time.Time) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	in, err := c.Admin().Inspect(ctx, name)
	if err != nil || in.Forced == nil || in.Forced.At.Before(since.Add(-time.Second)) {
		return ""
	}
	return forcedLine(in.Forced)
}

// stop ends the command's process group: SIGTERM, then SIGKILL after grace.
func stop(cmd *exec.Cmd, exited <-chan error, grace time.Duration) error {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-exited:
		// The leader is gone; make sure nothing it started lingers.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return err
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return <-exited
	}
}

// exitCode is the shell-style status of a finished command: its exit code,
// or 128+N when signal N ended it; other for an error that is neither.
func exitCode(err error, other int) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return other
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
