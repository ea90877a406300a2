package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

func init() {
	register(&command{
		name:    "demo",
		summary: "start local Redis nodes, run contending workers through the quorum lock, print what happened, stop the nodes",
		run:     runDemo,
	})
}

type demoConfig struct {
	nodes, clients, workers, rounds int
	ttl                             time.Duration
	freeze                          int
	seed                            uint64
}

func runDemo(ctx context.Context, args []string, out io.Writer) error {
	var cfg demoConfig
	fs := flags("demo", "start local Redis nodes, run contending workers through the quorum lock, print what happened, stop the nodes", out)
	fs.IntVar(&cfg.nodes, "node-count", 5, "independent redis-server processes to start")
	fs.Func("nodes", "not for demo: it starts its own servers (use --node-count N)", func(v string) error {
		return fmt.Errorf("demo starts its own servers: give their number with --node-count %s (--nodes is the node URLs of the other commands)", v)
	})
	fs.IntVar(&cfg.clients, "clients", 3, "quorum clients (separate connections, as separate processes would have)")
	fs.IntVar(&cfg.workers, "workers", 6, "contending workers, spread over the clients")
	fs.IntVar(&cfg.rounds, "rounds", 4, "acquisitions per worker in each phase")
	fs.DurationVar(&cfg.ttl, "ttl", 2*time.Second, "lock TTL (the watchdog renews every TTL/3)")
	fs.IntVar(&cfg.freeze, "freeze", 2, "nodes to freeze (SIGSTOP) in phase 2; a majority must stay alive")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed for the workers' random work times")
	if err := parse(fs, args); err != nil {
		return err
	}
	if cfg.nodes < 1 || cfg.clients < 1 || cfg.workers < 1 || cfg.rounds < 1 {
		return fmt.Errorf("%w: --node-count, --clients, --workers and --rounds must be at least 1", errUsage)
	}
	if err := checkTTL(cfg.ttl); err != nil {
		return err
	}
	if cfg.freeze < 0 || cfg.freeze > cfg.nodes-(cfg.nodes/2+1) {
		return fmt.Errorf("%w: --freeze %d would leave no majority of %d nodes: give --freeze %d or less, or more nodes with --node-count", errUsage, cfg.freeze, cfg.nodes, cfg.nodes-(cfg.nodes/2+1))
	}
	return demo(ctx, cfg, out)
}

// demoResource is the shared thing the lock protects: a counter that refuses
// writes carrying an older fencing token than one it has seen.
type demoResource struct {
	mu        sync.Mutex
	value     int
	lastToken int64
	holder    int // worker inside, -1 when none
	overlaps  int
	stale     int
}

func (r *demoResource) enter(w int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holder != -1 {
		r.overlaps++
	}
	r.holder = w
	return r.value
}

func (r *demoResource) leave(w, v int, token int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token < r.lastToken {
		r.stale++
	} else {
		r.value, r.lastToken = v, token
	}
	if r.holder == w {
		r.holder = -1
	}
}

type acquisition struct {
	phase   int
	worker  int
	client  int
	at      time.Duration
	waited  time.Duration
	token   int64
	votes   int
	nodes   int
	validit time.Duration
}

func demo(ctx context.Context, cfg demoConfig, out io.Writer) error {
	fmt.Fprintf(out, "Starting %d independent redis-server nodes on loopback...\n", cfg.nodes)
	servers, err := localredis.StartN(ctx, cfg.nodes, localredis.Config{Persistence: localredis.AOFAlways})
	if err != nil {
		return err
	}
	defer func() {
		localredis.StopAll(servers)
		fmt.Fprintf(out, "Stopped the %d nodes.\n", len(servers))
	}()
	for i, s := range servers {
		fmt.Fprintf(out, "  node %d  %s  pid %d  (appendonly yes, appendfsync always)\n", i, s.Addr(), s.PID())
	}

	var rcs []*redis.Client
	defer func() {
		for _, c := range rcs {
			_ = c.Close()
		}
	}()
	qcs := make([]*quorum.Client, cfg.clients)
	mus := make([]*quorum.Mutex, cfg.clients)
	for k := range qcs {
		var ucs []redis.UniversalClient
		for _, s := range servers {
			c := s.Client()
			rcs = append(rcs, c)
			ucs = append(ucs, c)
		}
		qc, err := quorum.New(ucs, quorum.WithTTL(cfg.ttl), quorum.WithFencing(true))
		if err != nil {
			return err
		}
		defer qc.Close()
		qcs[k] = qc
		if mus[k], err = qc.Mutex("demo/counter"); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%d clients, %d workers, lock \"demo/counter\" on a majority of %d (need %d), TTL %v with watchdog, fencing on.\n\n",
		cfg.clients, cfg.workers, cfg.nodes, cfg.nodes/2+1, cfg.ttl)

	res := &demoResource{holder: -1}
	var (
		mu   sync.Mutex
		acqs []acquisition
	)
	begin := time.Now()
	rng := rand.New(rand.NewPCG(cfg.seed, 7))
	work := make([][]time.Duration, cfg.workers)
	for w := range work {
		for range 2 * cfg.rounds {
			work[w] = append(work[w], time.Duration(2+rng.IntN(8))*time.Millisecond)
		}
	}
	phase := func(p int) error {
		var wg sync.WaitGroup
		errs := make([]error, cfg.workers)
		for w := range cfg.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := w % cfg.clients
				for r := range cfg.rounds {
					t0 := time.Now()
					lease, err := mus[k].Lock(ctx)
					if err != nil {
						errs[w] = err
						return
					}
					waited := time.Since(t0)
					v := res.enter(w)
					time.Sleep(work[w][(p-1)*cfg.rounds+r])
					res.leave(w, v+1, lease.Token())
					rep := lease.Report()
					votes := 0
					for _, vt := range rep.Votes {
						if vt.Granted {
							votes++
						}
					}
					a := acquisition{phase: p, worker: w, client: k, at: t0.Add(waited).Sub(begin), waited: waited,
						token: lease.Token(), votes: votes, nodes: len(rep.Votes), validit: rep.Validity}
					if err := lease.Unlock(ctx); err != nil {
						errs[w] = err
						return
					}
					mu.Lock()
					acqs = append(acqs, a)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		return nil
	}

	fmt.Fprintln(out, "Phase 1: all nodes up.")
	if err := phase(1); err != nil {
		return err
	}
	if cfg.freeze > 0 {
		fmt.Fprintf(out, "Phase 2: freezing %d of %d nodes (SIGSTOP): the majority keeps granting.\n", cfg.freeze, cfg.nodes)
		for _, s := range servers[:cfg.freeze] {
			if err := s.Pause(); err != nil {
				return err
			}
		}
		err := phase(2)
		for _, s := range servers[:cfg.freeze] {
			_ = s.Resume()
		}
		if err != nil {
			return err
		}
	}

	slices.SortFunc(acqs, func(a, b acquisition) int { return int(a.at - b.at) })
	fmt.Fprintf(out, "\n%-6s %-9s %-7s %-7s %-10s %-6s %-6s %s\n", "phase", "at", "worker", "client", "waited", "token", "votes", "validity")
	fmt.Fprintln(out, strings.Repeat("-", 68))
	var waits []time.Duration
	tokensIncrease := true
	var last int64
	for _, a := range acqs {
		fmt.Fprintf(out, "%-6d %-9s %-7d %-7d %-10s %-6d %d/%-4d %v\n", a.phase, a.at.Round(time.Millisecond), a.worker, a.client,
			a.waited.Round(10*time.Microsecond), a.token, a.votes, a.nodes, a.validit.Round(time.Millisecond))
		waits = append(waits, a.waited)
		if a.token <= last {
			tokensIncrease = false
		}
		last = a.token
	}
	slices.Sort(waits)
	p := func(q float64) time.Duration { return waits[min(len(waits)-1, int(q*float64(len(waits))))] }
	fmt.Fprintln(out, strings.Repeat("-", 68))
	fmt.Fprintf(out, "acquisitions        %d\n", len(acqs))
	fmt.Fprintf(out, "counter             %d (expected %d)\n", res.value, len(acqs))
	fmt.Fprintf(out, "overlapping holders %d\n", res.overlaps)
	fmt.Fprintf(out, "stale writes        %d\n", res.stale)
	fmt.Fprintf(out, "tokens increasing   %v (last %d)\n", tokensIncrease, last)
	fmt.Fprintf(out, "wait p50 / p99      %v / %v\n", p(0.5).Round(10*time.Microsecond), p(0.99).Round(10*time.Microsecond))
	if res.value != len(acqs) || res.overlaps != 0 || !tokensIncrease {
		return fmt.Errorf("mutual exclusion was violated: see the summary above")
	}
	return nil
}
