package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// electionCaseID is what -cases matches to select the election case.
const electionCaseID = "election leader hand-off"

// The election case: how long from the moment a leader stops (resigns,
// is killed, is frozen) until the next one is elected and can act, for a
// quorumlock Election and for the common way of doing it on a lock: a
// polling loop on redsync (TryLock every electRetryPeriod, as client-go's
// leaderelection polls every RetryPeriod, 2 s by default). Both use the
// same term TTL on the first electNodes nodes. A killed or frozen leader
// is a child process (this program again, in electChildEnv mode) so the
// death is a real SIGKILL or SIGSTOP.
const (
	electNodes       = 3
	electTTL         = 3 * time.Second
	electRetryPeriod = 2 * time.Second
	electChildEnv    = "QUORUMLOCK_BENCH_ELECT_CHILD" // "quorumlock" or "redsync"
)

// ElectRow is one hand-off kind for one implementation.
type ElectRow struct {
	Event string          `json:"event"` // resign, kill, sigstop
	Impl  string          `json:"impl"`
	Runs  int             `json:"runs"`
	P50   time.Duration   `json:"p50"`
	P99   time.Duration   `json:"p99"`
	All   []time.Duration `json:"all"`
}

// electionCase measures every row, runs times each.
func electionCase(ctx context.Context, servers []*localredis.Server, runs int, log io.Writer) ([]ElectRow, error) {
	addrs := make([]string, electNodes)
	for i := range addrs {
		addrs[i] = servers[i].Addr()
	}
	type row struct {
		event, impl string
		runs        int
		once        func(ctx context.Context, name string) (time.Duration, error)
	}
	rows := []row{
		{"resign", "quorumlock Election (pub/sub)", 4 * runs, func(ctx context.Context, name string) (time.Duration, error) {
			return ourResign(ctx, addrs, name)
		}},
		{"release", "redsync polling 2 s", runs, func(ctx context.Context, name string) (time.Duration, error) {
			return redsyncRelease(ctx, addrs, name)
		}},
	}
	for _, death := range []struct {
		event string
		sig   syscall.Signal
	}{{"kill -9", syscall.SIGKILL}, {"SIGSTOP", syscall.SIGSTOP}} {
		for _, impl := range []string{"quorumlock", "redsync"} {
			label := "quorumlock Election"
			if impl == "redsync" {
				label = "redsync polling 2 s"
			}
			rows = append(rows, row{death.event, label, runs, func(ctx context.Context, name string) (time.Duration, error) {
				return afterDeath(ctx, addrs, impl, name, death.sig)
			}})
		}
	}
	var out []ElectRow
	for i, r := range rows {
		fmt.Fprintf(log, "election hand-off after %s, %s (%d runs) …", r.event, r.impl, r.runs)
		start := time.Now()
		var all []time.Duration
		for j := range r.runs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			d, err := r.once(ctx, fmt.Sprintf("bench-elect-%d-%d-%d", time.Now().UnixNano(), i, j))
			if err != nil {
				return nil, fmt.Errorf("election %s %s: %w", r.event, r.impl, err)
			}
			all = append(all, d)
		}
		fmt.Fprintf(log, " %v\n", time.Since(start).Round(100*time.Millisecond))
		s := sortedCopy(all)
		out = append(out, ElectRow{Event: r.event, Impl: r.impl, Runs: len(all), P50: percentile(s, 0.5), P99: percentile(s, 0.99), All: all})
	}
	return out, nil
}

func printElection(w io.Writer, rows []ElectRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Election: leader hand-off, N=%d, term TTL %v\n\n", electNodes, electTTL)
	fmt.Fprintf(w, "From the leader's Unlock, SIGKILL or SIGSTOP to the next leader elected (its Campaign/TryLock returned).\n")
	fmt.Fprintf(w, "redsync: a loop of TryLock every %v (client-go's RetryPeriod), renewing with Extend every TTL/3 while leader.\n", electRetryPeriod)
	fmt.Fprintf(w, "p99 is nearest-rank: with fewer than 100 runs it is the slowest run.\n\n")
	fmt.Fprintf(w, "| leader stops by | implementation | runs | p50 | p99 |\n|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s |\n", r.Event, r.Impl, r.Runs, fmtDur(r.P50), fmtDur(r.P99))
	}
}

func fmtDur(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(time.Millisecond).String()
}

func electClients(addrs []string) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		out[i] = redis.NewClient(localredis.ClientOptions(a))
	}
	return out
}

func closeClients(cs []redis.UniversalClient) {
	for _, c := range cs {
		_ = c.Close()
	}
}

func ourElection(addrs []string, name string) (*quorum.Client, *quorum.Election, func(), error) {
	cs := electClients(addrs)
	c, err := quorum.New(cs, quorum.WithTTL(electTTL))
	if err != nil {
		closeClients(cs)
		return nil, nil, nil, err
	}
	e, err := c.Election(name)
	if err != nil {
		c.Close()
		closeClients(cs)
		return nil, nil, nil, err
	}
	return c, e, func() { c.Close(); closeClients(cs) }, nil
}

// ourResign: a leader resigns while a follower (another client) waits in
// Campaign.
func ourResign(ctx context.Context, addrs []string, name string) (time.Duration, error) {
	_, leader, closeL, err := ourElection(addrs, name)
	if err != nil {
		return 0, err
	}
	defer closeL()
	_, follower, closeF, err := ourElection(addrs, name)
	if err != nil {
		return 0, err
	}
	defer closeF()
	t, err := leader.Campaign(ctx, "leader")
	if err != nil {
		return 0, err
	}
	elected := make(chan result, 1)
	go func() {
		ft, err := follower.Campaign(ctx, "follower")
		elected <- result{time.Now(), err}
		if ft != nil {
			_ = ft.Unlock(context.WithoutCancel(ctx))
		}
	}()
	time.Sleep(phase()) // the follower is waiting
	start := time.Now()
	if err := t.Unlock(ctx); err != nil {
		return 0, err
	}
	r := <-elected
	return r.at.Sub(start), r.err
}

// phase is how long a leader leads with a follower waiting before it
// stops: 100 ms and a random part of a retry period, so the stop falls at
// any point of the follower's polling period and of the leader's renewal
// period (a fixed delay would measure one phase only).
func phase() time.Duration {
	return 100*time.Millisecond + rand.N(electRetryPeriod)
}

type result struct {
	at  time.Time
	err error
}

func redsyncOf(addrs []string) (*redsync.Redsync, func()) {
	cs := electClients(addrs)
	pools := make([]rsredis.Pool, len(cs))
	for i, c := range cs {
		pools[i] = goredis.NewPool(c)
	}
	return redsync.New(pools...), func() { closeClients(cs) }
}

// redsyncCampaign is the common election loop: TryLock every retry period
// until it succeeds.
func redsyncCampaign(ctx context.Context, rs *redsync.Redsync, name string) (*redsync.Mutex, error) {
	for {
		m := rs.NewMutex(name, redsync.WithExpiry(electTTL), redsync.WithTries(1))
		if err := m.TryLockContext(ctx); err == nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(electRetryPeriod):
		}
	}
}

// redsyncRelease: a leader unlocks while a follower polls.
func redsyncRelease(ctx context.Context, addrs []string, name string) (time.Duration, error) {
	rs, closeRS := redsyncOf(addrs)
	defer closeRS()
	lm, err := redsyncCampaign(ctx, rs, name)
	if err != nil {
		return 0, err
	}
	elected := make(chan result, 1)
	go func() {
		m, err := redsyncCampaign(ctx, rs, name)
		elected <- result{time.Now(), err}
		if m != nil {
			_, _ = m.UnlockContext(context.WithoutCancel(ctx))
		}
	}()
	time.Sleep(phase()) // the follower has polled once
	start := time.Now()
	if _, err := lm.UnlockContext(ctx); err != nil {
		return 0, err
	}
	r := <-elected
	return r.at.Sub(start), r.err
}

// afterDeath: a child process is elected, then gets sig while a follower
// here campaigns; the time is from the signal to the follower's election.
func afterDeath(ctx context.Context, addrs []string, impl, name string, sig syscall.Signal) (time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	child := exec.Command(self)
	child.Env = append(os.Environ(), electChildEnv+"="+impl, "QUORUMLOCK_BENCH_ELECT_NODES="+strings.Join(addrs, ","), "QUORUMLOCK_BENCH_ELECT_NAME="+name)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := child.Start(); err != nil {
		return 0, err
	}
	defer func() {
		_ = child.Process.Signal(syscall.SIGCONT)
		_ = child.Process.Kill()
		_ = child.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "elected") {
		return 0, fmt.Errorf("child not elected: %q %v", line, err)
	}
	elected := make(chan result, 1)
	var stopFollower func()
	switch impl {
	case "quorumlock":
		_, e, closeF, err := ourElection(addrs, name)
		if err != nil {
			return 0, err
		}
		stopFollower = closeF
		go func() {
			t, err := e.Campaign(ctx, "follower")
			elected <- result{time.Now(), err}
			if t != nil {
				_ = t.Unlock(context.WithoutCancel(ctx))
			}
		}()
	default:
		rs, closeRS := redsyncOf(addrs)
		stopFollower = closeRS
		go func() {
			m, err := redsyncCampaign(ctx, rs, name)
			elected <- result{time.Now(), err}
			if m != nil {
				_, _ = m.UnlockContext(context.WithoutCancel(ctx))
			}
		}()
	}
	defer stopFollower()
	time.Sleep(phase()) // the follower is waiting or polling
	start := time.Now()
	if err := child.Process.Signal(sig); err != nil {
		return 0, err
	}
	select {
	case r := <-elected:
		return r.at.Sub(start), r.err
	case <-time.After(4 * (electTTL + electRetryPeriod)):
		return 0, errors.New("no new leader")
	}
}

// electChild is the leader process of afterDeath: it campaigns, says
// "elected" on stdout, and leads (renewing) until it is killed.
func electChild(impl string) error {
	ctx := context.Background()
	addrs := strings.Split(os.Getenv("QUORUMLOCK_BENCH_ELECT_NODES"), ",")
	name := os.Getenv("QUORUMLOCK_BENCH_ELECT_NAME")
	switch impl {
	case "quorumlock":
		_, e, _, err := ourElection(addrs, name)
		if err != nil {
			return err
		}
		if _, err := e.Campaign(ctx, "child"); err != nil {
			return err
		}
		fmt.Println("elected")
		for { // the term's watchdog renews until the process dies
			time.Sleep(time.Hour)
		}
	case "redsync":
		rs, _ := redsyncOf(addrs)
		m, err := redsyncCampaign(ctx, rs, name)
		if err != nil {
			return err
		}
		fmt.Println("elected")
		for {
			time.Sleep(electTTL / 3)
			if ok, err := m.ExtendContext(ctx); !ok || err != nil {
				return fmt.Errorf("redsync leader lost its lock: %v", err)
			}
		}
	}
	return fmt.Errorf("unknown %s %q", electChildEnv, impl)
}
