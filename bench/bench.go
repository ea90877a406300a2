package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/adapters"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// entry is one implementation (with its tuning) in one case.
type entry struct {
	impl    adapters.Impl
	variant string // "default", "retry-5ms", "ctx-timeouts", "fencing", …
	locker  adapters.Maker
	rounds  int // at most this many rounds (0: all); for peers that take seconds per op
	samples []sample
}

func (e *entry) label() string {
	if e.variant == "" || e.variant == "default" && e.impl != adapters.Redsync {
		return string(e.impl)
	}
	return string(e.impl) + " " + e.variant
}

// workload runs one implementation once (one round) and measures it.
type workload func(ctx context.Context, e *entry, name string) sample

// spec is one case: a workload over some nodes, for several implementations.
type spec struct {
	id         string // family, matched by -cases
	title      string
	nodes      int
	goroutines int
	frozen     int // nodes paused (SIGSTOP) for the case: the last ones
	entries    []*entry
	warm       workload // optional, run once per entry before the rounds
	work       workload
	// metric names what p50/p99 measure.
	metric string
	// stats reads the servers' INFO commandstats around every run even
	// without QUORUMLOCK_BENCH_STATS (the functions case's server µs).
	stats bool
	// turns splits a round into this many shorter turns of every entry,
	// taken in rotation (0: one). For one goroutine: this machine switches
	// between two speeds for single-goroutine loops on a scale of seconds,
	// and a pair of turns of 100 ms is far more often within one speed than
	// a pair of 500 ms.
	turns int
}

type bench struct {
	o       options
	servers []*localredis.Server
	log     io.Writer
	clients []redis.UniversalClient
	lockers []adapters.Maker
}

// clientSet is how an implementation talks to the nodes.
type clientSet int

const (
	// recommended: localredis.ClientOptions — context deadlines honoured, no
	// hidden retries, one dial attempt (quorumlock's recommendation).
	recommended clientSet = iota
	// goRedisDefault: go-redis' defaults (redis.Options{Addr}), what a peer's
	// README sets up.
	goRedisDefault
)

// newClients makes one fresh go-redis client per node for the first n
// servers: every implementation gets its own pools.
func (b *bench) newClients(set clientSet, n int) []redis.UniversalClient {
	out := make([]redis.UniversalClient, n)
	for i := range n {
		var c *redis.Client
		if set == recommended {
			c = redis.NewClient(localredis.ClientOptions(b.servers[i].Addr()))
		} else {
			c = redis.NewClient(&redis.Options{Addr: b.servers[i].Addr()})
		}
		out[i] = c
		b.clients = append(b.clients, c)
	}
	return out
}

func (b *bench) entry(n int, set clientSet, variant string, cfg adapters.Config) *entry {
	l, err := adapters.New(b.newClients(set, n), cfg)
	if err != nil {
		panic(fmt.Sprintf("bench: %s: %v", cfg.Kind, err)) // a bug in this program
	}
	b.lockers = append(b.lockers, l)
	if variant == "" {
		variant = "default"
	}
	return &entry{impl: cfg.Kind, variant: variant, locker: l}
}

func (b *bench) close() {
	for _, l := range b.lockers {
		_ = l.Close()
	}
	for _, c := range b.clients {
		_ = c.Close()
	}
}

const tuned = 5 * time.Millisecond

// lockUnlock makes the case's work Lock+Unlock in a loop by each of its
// goroutines for d per round, after a warm-up of d/5; with one goroutine
// the round is taken in 5 turns of d/5 (spec.turns).
func (s *spec) lockUnlock(d time.Duration) {
	s.warm = pairs(s.goroutines, d/5)
	if s.goroutines == 1 {
		s.turns = 5
		d /= 5
	}
	s.work = pairs(s.goroutines, d)
}

// specs lists the cases in the order they run.
func (b *bench) specs() []*spec {
	var out []*spec
	ours := func(n int) *entry { return b.entry(n, recommended, "", adapters.Config{Kind: adapters.Quorumlock}) }
	// The path before batching (quorum.WithBatching(false)), for the
	// comparison the batching targets are about.
	unbatched := func(n int) *entry {
		return b.entry(n, recommended, "unbatched", adapters.Config{Kind: adapters.Quorumlock, Quorum: []quorum.Option{quorum.WithBatching(false)}})
	}
	raw := func(n int) *entry { return b.entry(n, goRedisDefault, "", adapters.Config{Kind: adapters.Raw}) }
	rsDefault := func(n int) *entry { return b.entry(n, goRedisDefault, "", adapters.Config{Kind: adapters.Redsync}) }
	rsTuned := func(n int) *entry {
		return b.entry(n, goRedisDefault, "retry-5ms", adapters.Config{Kind: adapters.Redsync, RetryDelay: tuned})
	}
	rlTuned := func() *entry {
		return b.entry(1, goRedisDefault, "retry-5ms", adapters.Config{Kind: adapters.Redislock, RetryDelay: tuned})
	}
	// rueidislock makes its own rueidis client from the node's address.
	rdDefault := func() *entry { return b.entry(1, goRedisDefault, "", adapters.Config{Kind: adapters.Rueidislock}) }
	rdNoLoop := func() *entry {
		return b.entry(1, goRedisDefault, "noloop", adapters.Config{Kind: adapters.Rueidislock, Tuned: true})
	}
	// throughput is Lock+Unlock pairs on distinct names by g goroutines on
	// n nodes, for every implementation that runs on n nodes.
	throughput := func(id, title string, n, g int) *spec {
		s := &spec{id: id, nodes: n, goroutines: g, metric: "Lock+Unlock", title: title}
		s.entries = []*entry{ours(n), unbatched(n), raw(n), rsDefault(n)}
		if n == 1 {
			s.entries = append(s.entries, rlTuned(), rdDefault())
		}
		if n == 1 && g == 1 {
			// The lone caller with the library's defaults (fencing on),
			// next to "quorumlock" (fencing off, as the peers).
			s.entries = append(s.entries, b.entry(1, recommended, "defaults", adapters.Config{Kind: adapters.Quorumlock, Fencing: true}))
		}
		s.lockUnlock(b.o.dur)
		return s
	}
	for _, n := range []int{1, 3, 5} {
		for _, g := range []int{1, 16, 64} {
			out = append(out, throughput("uncontended", fmt.Sprintf("uncontended Lock+Unlock, N=%d, %d goroutine%s", n, g, plural(g)), n, g))
		}
	}
	if b.o.curve != "" {
		// The curve: throughput against goroutines (drawn by -curve).
		for _, n := range []int{1, 3, 5} {
			for _, g := range curveGoroutines {
				out = append(out, throughput("curve", fmt.Sprintf("curve: Lock+Unlock, N=%d, %d goroutine%s, distinct names", n, g, plural(g)), n, g))
			}
		}
	}
	holds := []time.Duration{b.o.hold}
	if !b.o.quick && b.o.hold > 0 {
		holds = append(holds, 0) // the literal case, to show the relay (see handoff)
	}
	for _, hold := range holds {
		for _, n := range []int{1, 5} {
			id := "handoff"
			title := fmt.Sprintf("forced hand-off, %d goroutines on one name, N=%d, lock held %v", handoffWorkers, n, hold)
			if hold == 0 && b.o.hold > 0 {
				id = "handoff-nohold"
				title = fmt.Sprintf("forced hand-off, %d goroutines on one name, N=%d, released at once (relay-prone, see docs)", handoffWorkers, n)
			}
			s := &spec{id: id, nodes: n, goroutines: handoffWorkers, metric: "Lock wait", title: title}
			s.entries = []*entry{ours(n), unbatched(n), rsDefault(n), rsTuned(n)}
			if n == 1 {
				s.entries = append(s.entries, rlTuned(), rdDefault(), rdNoLoop())
			}
			s.work = handoff(b.o.handoff, hold)
			s.warm = handoff(b.o.handoff/5, hold)
			out = append(out, s)
		}
	}
	// The frozen-node cases' titles do not say "nodes": -cases matches
	// titles too, and that word selects the quorum-size curve.
	// The frozen-node cases compare us with redsync on go-redis defaults
	// (slow: fewer rounds) and with redsync on our client settings.
	frozenEntries := func() []*entry {
		slow := rsDefault(5)
		slow.rounds = b.o.slowPeers
		return []*entry{ours(5), unbatched(5), slow, b.entry(5, recommended, "ctx-timeouts", adapters.Config{Kind: adapters.Redsync})}
	}
	{
		s := &spec{id: "frozen-2of5", nodes: 5, goroutines: 1, frozen: 2, metric: "Lock",
			title: "2 of 5 frozen (SIGSTOP): Lock+Unlock, latency of Lock"}
		s.entries = frozenEntries()
		s.work = frozenPairs(b.o.dur)
		out = append(out, s)
	}
	{
		s := &spec{id: "frozen-3of5-trylock", nodes: 5, goroutines: 1, frozen: 3, metric: "TryLock (fails)",
			title: "3 of 5 frozen: TryLock, time to give up"}
		s.entries = frozenEntries()
		s.work = tryFail(b.o.dur)
		out = append(out, s)

		s2 := &spec{id: "frozen-3of5-lock", nodes: 5, goroutines: 1, frozen: 3, metric: "Lock, 2 s deadline",
			title: "3 of 5 frozen: Lock with a 2 s deadline, time to give up"}
		s2.entries = frozenEntries()
		s2.work = lockDeadline(lockDeadlineBudget)
		out = append(out, s2)
	}
	// Fencing on against off (the target: at least 0.9×), paired,
	// at N=1 and N=5, one goroutine and 64.
	for _, n := range []int{5, 1} {
		for _, g := range []int{1, 64} {
			s := &spec{id: "fencing", nodes: n, goroutines: g, metric: "Lock+Unlock",
				title: fmt.Sprintf("Lock+Unlock with fencing tokens, N=%d, %d goroutine%s", n, g, plural(g))}
			fenced := b.entry(n, recommended, "fencing", adapters.Config{Kind: adapters.Quorumlock, Fencing: true})
			s.entries = []*entry{fenced, ours(n)}
			if n == 5 && g == 1 {
				fencedUnbatched := b.entry(5, recommended, "fencing unbatched", adapters.Config{Kind: adapters.Quorumlock, Fencing: true, Quorum: []quorum.Option{quorum.WithBatching(false)}})
				s.entries = append(s.entries, fencedUnbatched, unbatched(5))
			}
			s.lockUnlock(b.o.dur)
			out = append(out, s)
		}
	}
	// The library's defaults against each one turned off (docs/defaults.md):
	// fencing on, and restart detection, which on these fsync-always nodes
	// asks nothing per call; forced on every node (WithRestartDetection) it
	// costs what it costs on a node without persistence, an INFO in each
	// acquire's round trip.
	for _, n := range []int{1, 5} {
		s := &spec{id: fmt.Sprintf("defaults-n%d", n), nodes: n, goroutines: 1, metric: "Lock+Unlock",
			title: fmt.Sprintf("library defaults against each turned off, N=%d, 1 goroutine", n)}
		s.entries = []*entry{
			b.entry(n, recommended, "defaults", adapters.Config{Kind: adapters.Quorumlock, Fencing: true}),
			ours(n),
			b.entry(n, recommended, "defaults + restart detection on every node", adapters.Config{Kind: adapters.Quorumlock, Fencing: true, Quorum: []quorum.Option{quorum.WithRestartDetection(true)}}),
			b.entry(n, recommended, "defaults - restart detection", adapters.Config{Kind: adapters.Quorumlock, Fencing: true, Quorum: []quorum.Option{quorum.WithRestartDetection(false)}}),
		}
		s.lockUnlock(b.o.dur)
		out = append(out, s)
	}
	out = append(out, functionsSpec(b))
	return out
}

const lockDeadlineBudget = 2 * time.Second

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// all runs every selected case and returns one CaseRow per case × entry.
func (b *bench) all(ctx context.Context) ([]CaseRow, error) {
	var res []CaseRow
	specs := b.specs()
	for _, s := range specs {
		if b.o.filter != nil && !b.o.filter.MatchString(s.id+" "+s.title) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if b.o.impls != nil {
			s.entries = slices.DeleteFunc(s.entries, func(e *entry) bool { return !b.o.impls.MatchString(e.label()) })
			if len(s.entries) == 0 {
				continue
			}
		}
		start := time.Now()
		fmt.Fprintf(b.log, "%s …", s.title)
		if err := b.runSpec(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: %w", s.title, err)
		}
		fmt.Fprintf(b.log, " %v\n", time.Since(start).Round(100*time.Millisecond))
		for _, e := range s.entries {
			res = append(res, summarize(s, e))
		}
	}
	if len(res) == 0 && (b.o.filter == nil || !slices.ContainsFunc([]string{memoryCaseID, electionCaseID, scalingCaseID, waitersCaseID, nodesCaseID, namesCaseID}, b.o.filter.MatchString)) {
		return nil, errors.New("no case matched -cases")
	}
	return res, nil
}

func (b *bench) runSpec(ctx context.Context, s *spec) error {
	// Frozen nodes are paused afresh for every run of every implementation
	// and resumed (and emptied) after it: connections one implementation
	// left queued on a paused node (a timed-out call's connection is dropped
	// and a new one dialled) must not fill its accept queue for the next,
	// which would turn a hanging read into a quick dial failure.
	var frozen []*localredis.Server
	if s.frozen > 0 {
		frozen = b.servers[s.nodes-s.frozen : s.nodes]
	}
	freeze := func() error {
		for _, srv := range frozen {
			if err := srv.Pause(); err != nil {
				return err
			}
		}
		return nil
	}
	thaw := func() {
		for _, srv := range frozen {
			if srv.Paused() {
				_ = srv.Resume()
			}
		}
		if len(frozen) > 0 {
			b.settle(frozen)
		}
	}
	defer thaw()
	name := func(e *entry) string {
		return fmt.Sprintf("%s:n%d:g%d:%s:%s:%d", s.id, s.nodes, s.goroutines, e.impl, e.variant, len(s.metric))
	}
	if s.warm != nil {
		for _, e := range s.entries {
			s.warm(ctx, e, name(e)+":warm")
		}
	}
	for r := 0; r < b.o.rounds*max(s.turns, 1); r++ {
		// Rotate the order every round: nobody always goes first.
		for k := range s.entries {
			e := s.entries[(k+r)%len(s.entries)]
			if e.rounds > 0 && len(e.samples) >= e.rounds {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := freeze(); err != nil {
				return err
			}
			runtime.GC()
			before := measureStart(b.servers[:s.nodes])
			if s.stats && before.stats == nil {
				before.stats = serverStats(before.servers)
			}
			smp := s.work(ctx, e, name(e))
			before.finish(&smp)
			thaw()
			e.samples = append(e.samples, smp)
			fmt.Fprint(b.log, ".")
		}
	}
	return nil
}

// settle waits until resumed servers answered what was queued while they
// were frozen, then empties them, so later cases start clean.
func (b *bench) settle(servers []*localredis.Server) {
	for _, srv := range servers {
		c := srv.Client()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for ctx.Err() == nil {
			if c.Ping(ctx).Err() == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		_ = c.FlushAll(ctx).Err()
		cancel()
		_ = c.Close()
	}
}
