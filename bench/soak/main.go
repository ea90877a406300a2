// Command soak runs contended locking of every lock kind (Mutex, RWMutex,
// FairMutex, MutexAll) and an election against a quorum of 3 redis-server
// nodes for a while, restarting one node every few minutes, and watches the
// client for leaks: it samples its RSS, goroutines and open sockets and
// each node's keys, draws them, and fails when any of them grew.
//
//	cd bench && go run ./soak -dur 30m -plot soak.png -json soak.json
//
// A value grew when its median over the last samples is above 1.2× its
// median around the reference time (5 minutes in, or a quarter of a shorter
// run): the warm-up (pools filling, the first fencing counters) is behind
// it by then, and a leak keeps climbing after it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/internal/proc"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// minDur is the shortest run judged: pools, goroutines and the fencing
// counters of the 1,000 names fill up over about the first minute, and
// the reference is a quarter into a run shorter than 20 minutes.
const minDur = 4 * time.Minute

type options struct {
	dur, every, restart time.Duration
	nodes               int
	plot, json          string
	report              string
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.DurationVar(&o.dur, "dur", time.Hour, "how long to run")
	fs.DurationVar(&o.every, "every", 5*time.Second, "sampling interval")
	fs.DurationVar(&o.restart, "restart", 3*time.Minute, "kill and restart one node (in turn) this often; 0: never")
	fs.IntVar(&o.nodes, "nodes", 3, "nodes of the quorum")
	fs.StringVar(&o.plot, "plot", "soak.png", "write the samples' plot to this PNG file (empty: none)")
	fs.StringVar(&o.json, "json", "", "write the samples and the verdict to this file as JSON")
	fs.StringVar(&o.report, "report", "", "judge an earlier run's -json file again with this code, print it (and write -json, -plot if given), and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.report != "" {
		rep, err := rejudge(o.report, o.every)
		if err != nil {
			return err
		}
		return finish(o, rep, stdout, stderr)
	}
	if o.dur < minDur || o.every <= 0 || o.restart < 0 || o.nodes < 1 {
		return fmt.Errorf("-dur must be at least %v (the reference is a quarter in, after the first minute's warm-up), -every positive, -restart not negative, -nodes at least 1", minDur)
	}
	redis.SetLogger(quietLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := soak(ctx, o, stderr)
	if err != nil {
		return err
	}
	return finish(o, rep, stdout, stderr)
}

// rejudge reads a run's JSON and judges it with this code. A run from
// before the socket bound was recorded gets the bound of the default
// pools (go-redis: 10 per CPU and node, per client).
func rejudge(path string, every time.Duration) (*SoakReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-report: %w", err)
	}
	var rep SoakReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("-report: %s: %w", path, err)
	}
	if len(rep.Samples) < 2 {
		return nil, fmt.Errorf("-report: %s holds no samples", path)
	}
	if rep.SocketBound == 0 {
		rep.SocketBound = rep.Nodes + 2*rep.Nodes*(10*rep.CPUs+1)
	}
	if len(rep.Samples) > 1 {
		every = time.Duration((rep.Samples[1].At - rep.Samples[0].At) * float64(time.Second))
	}
	dur, err := time.ParseDuration(rep.Duration)
	if err != nil {
		return nil, fmt.Errorf("-report: %s: duration: %w", path, err)
	}
	rep.judge(min(5*time.Minute, dur/4), every)
	return &rep, nil
}

// finish prints the run, writes its files and says whether it passed.
func finish(o options, rep *SoakReport, stdout, stderr io.Writer) error {
	rep.print(stdout)
	if o.json != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.json, append(data, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", o.json)
	}
	if o.plot != "" {
		if err := drawSoak(o.plot, rep); err != nil {
			return fmt.Errorf("-plot: %w", err)
		}
		fmt.Fprintf(stderr, "wrote %s\n", o.plot)
	}
	if !rep.Pass {
		return errors.New("a value grew over the run (see the table)")
	}
	return nil
}

// Sample is one look at the client and the nodes, At seconds into the run.
type Sample struct {
	At         float64 `json:"at_s"`
	RSSMB      float64 `json:"rss_mb"`
	HeapMB     float64 `json:"heap_inuse_mb"`
	Goroutines int     `json:"goroutines"`
	Sockets    int     `json:"sockets"`
	// Keys per node, -1 for a node that did not answer (restarting).
	Keys []int `json:"keys"`
	// Acquisitions and errors since the previous sample, all kinds.
	Acquired int64 `json:"acquired"`
	Errors   int64 `json:"errors"`
}

// SoakReport is the run: its samples, node restarts, per-kind counts and the
// verdict.
type SoakReport struct {
	Started  time.Time        `json:"started"`
	Duration string           `json:"duration"`
	Nodes    int              `json:"nodes"`
	CPUs     int              `json:"cpus"`
	Load     string           `json:"load_average_at_end,omitempty"`
	Restarts []float64        `json:"restarts_at_s"`
	Samples  []Sample         `json:"samples"`
	Kinds    map[string]Count `json:"kinds"`
	Checks   []Check          `json:"checks"`
	// After Close: goroutines above the count before the clients existed,
	// and keys without a TTL on the nodes.
	GoroutinesLeft int `json:"goroutines_left_after_close"`
	KeysNoTTL      int `json:"keys_without_ttl_after_close"`
	// SocketBound is the most sockets the client may hold: every pool
	// full, a pub/sub connection per client and node, one per node for
	// the sampler.
	SocketBound int  `json:"socket_bound"`
	Pass        bool `json:"pass"`
}

// Count is what one lock kind did over the run: acquisitions, tries
// refused because another owner held the lock (TryLock's normal "no"), and
// errors (timeouts, nodes restarting, releases not confirmed by a quorum).
type Count struct {
	Acquired int64  `json:"acquired"`
	Refused  int64  `json:"refused,omitempty"`
	Errors   int64  `json:"errors"`
	First    string `json:"first_error,omitempty"`
}

// Check is one judged value: its median around the reference time and
// over the last samples.
type Check struct {
	What  string  `json:"what"`
	Ref   float64 `json:"at_reference"`
	End   float64 `json:"at_end"`
	Limit float64 `json:"limit"`
	Pass  bool    `json:"pass"`
}

// counter counts one kind's acquisitions and errors.
type counter struct {
	acquired, refused, errors atomic.Int64
	mu                        sync.Mutex
	first                     string
}

// done counts an acquisition's outcome.
func (c *counter) done(err error) {
	switch {
	case err == nil:
		c.acquired.Add(1)
	case errors.Is(err, quorum.ErrTaken):
		c.refused.Add(1)
	default:
		c.fail(err)
	}
}

// fail counts an error.
func (c *counter) fail(err error) {
	c.errors.Add(1)
	c.mu.Lock()
	if c.first == "" {
		c.first = strings.SplitN(err.Error(), "\n", 2)[0]
	}
	c.mu.Unlock()
}

func soak(ctx context.Context, o options, log io.Writer) (*SoakReport, error) {
	began := time.Now()
	fmt.Fprintf(log, "starting %d redis-server nodes…\n", o.nodes)
	servers, err := localredis.StartN(ctx, o.nodes, localredis.Config{})
	if err != nil {
		return nil, err
	}
	defer localredis.StopAll(servers)
	admins := make([]*redis.Client, len(servers))
	for i, s := range servers {
		admins[i] = s.Client()
		defer admins[i].Close()
	}
	baseGoroutines := runtime.NumGoroutine()

	// Two clients, as two processes of one service would have; each kind
	// of lock is used through both.
	var clients []*quorum.Client
	socketBound := len(servers) // the sampler's
	for range 2 {
		var rcs []redis.UniversalClient
		for _, s := range servers {
			c := s.Client()
			rcs = append(rcs, c)
			socketBound += c.Options().PoolSize + 1 // the pool and the pub/sub listener
		}
		c, err := quorum.New(rcs, quorum.WithTTL(5*time.Second))
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	closed := false
	closeClients := func() {
		if !closed {
			for _, c := range clients {
				_ = c.Close()
			}
			closed = true
		}
	}
	defer closeClients()

	kinds := []string{"Mutex", "RWMutex write", "RWMutex read", "FairMutex", "MutexAll", "Mutex, 1000 names", "election"}
	counts := map[string]*counter{}
	for _, k := range kinds {
		counts[k] = &counter{}
	}
	wctx, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 16 {
		c := clients[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(wctx, c, i, counts)
		}()
	}

	rep := &SoakReport{Started: began.UTC().Truncate(time.Second), Nodes: o.nodes, CPUs: runtime.NumCPU(), Kinds: map[string]Count{},
		SocketBound: socketBound}
	end := time.After(o.dur)
	tick := time.NewTicker(o.every)
	defer tick.Stop()
	var restart <-chan time.Time
	if o.restart > 0 {
		rt := time.NewTicker(o.restart)
		defer rt.Stop()
		restart = rt.C
	}
	var lastAcq, lastErr int64
	next := 0
	take := func() {
		s := sampleNow(ctx, admins)
		s.At = time.Since(began).Seconds()
		var acq, errs int64
		for _, c := range counts {
			acq += c.acquired.Load()
			errs += c.errors.Load()
		}
		s.Acquired, s.Errors = acq-lastAcq, errs-lastErr
		lastAcq, lastErr = acq, errs
		rep.Samples = append(rep.Samples, s)
		fmt.Fprintf(log, "%6.0fs rss %.1f MB, %d goroutines, %d sockets, keys %v, %d acquired, %d errors\n",
			s.At, s.RSSMB, s.Goroutines, s.Sockets, s.Keys, s.Acquired, s.Errors)
	}
	take()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end:
			break loop
		case <-tick.C:
			take()
		case <-restart:
			s := servers[next%len(servers)]
			next++
			rep.Restarts = append(rep.Restarts, time.Since(began).Seconds())
			fmt.Fprintf(log, "restarting node %d\n", (next-1)%len(servers))
			if err := s.Kill(); err != nil {
				fmt.Fprintf(log, "kill: %v\n", err)
			}
			time.Sleep(time.Second)
			if err := s.Restart(ctx); err != nil {
				stopWork()
				wg.Wait()
				return nil, fmt.Errorf("restart node: %w", err)
			}
		}
	}
	take()
	stopWork()
	wg.Wait()
	closeClients()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Close returns when the client's goroutines were told to stop; give
	// them a moment to be gone.
	for i := 0; i < 50 && runtime.NumGoroutine() > baseGoroutines; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	rep.GoroutinesLeft = max(0, runtime.NumGoroutine()-baseGoroutines)
	for _, a := range admins {
		n, err := keysWithoutTTL(ctx, a)
		if err != nil {
			return nil, err
		}
		rep.KeysNoTTL += n
	}
	rep.Duration = time.Since(began).Round(time.Second).String()
	rep.Load = proc.LoadAvg()
	for _, k := range kinds {
		c := counts[k]
		rep.Kinds[k] = Count{Acquired: c.acquired.Load(), Refused: c.refused.Load(), Errors: c.errors.Load(), First: c.first}
	}
	rep.judge(min(5*time.Minute, o.dur/4), o.every)
	return rep, nil
}

// work is one goroutine's loop; i picks its lock kind.
func work(ctx context.Context, c *quorum.Client, i int, counts map[string]*counter) {
	rng := rand.New(rand.NewPCG(uint64(i), 1))
	hold := func() { time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond) }
	// lock runs one acquisition with a bounded wait and counts it; a
	// wait that ran out counts as an error (with nodes restarting, some
	// do).
	lock := func(kind string, acquire func(context.Context) (*quorum.Lease, error)) {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		l, err := acquire(actx)
		cancel()
		if ctx.Err() != nil {
			if err == nil {
				_ = l.Unlock(context.Background())
			}
			return
		}
		counts[kind].done(err)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			return
		}
		hold()
		if err := l.Unlock(ctx); err != nil && ctx.Err() == nil {
			counts[kind].fail(fmt.Errorf("unlock: %w", err))
		}
	}
	var loop func()
	switch i % 8 {
	case 0, 1: // four goroutines on two names
		m, _ := c.Mutex("soak/mutex/" + strconv.Itoa(i%2))
		loop = func() { lock("Mutex", m.Lock) }
	case 2: // one name, a quarter of the acquisitions writes
		rw, _ := c.RWMutex("soak/rw")
		loop = func() {
			if rng.IntN(4) == 0 {
				lock("RWMutex write", rw.Lock)
			} else {
				lock("RWMutex read", rw.RLock)
			}
		}
	case 3:
		f, _ := c.FairMutex("soak/fair")
		loop = func() { lock("FairMutex", f.Lock) }
	case 4: // overlapping sets: {a,b} and {b,c}
		set := []string{"soak/all/a", "soak/all/b"}
		if i >= 8 {
			set = []string{"soak/all/b", "soak/all/c"}
		}
		m, _ := c.MutexAll(set)
		loop = func() { lock("MutexAll", m.Lock) }
	case 5, 6: // uncontended churn over a bounded set of names: fencing counters stay bounded
		loop = func() {
			m, _ := c.Mutex("soak/many/" + strconv.Itoa(rng.IntN(1000)))
			lock("Mutex, 1000 names", m.TryLock)
		}
	case 7:
		e, _ := c.Election("soak/leader")
		loop = func() {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			t, err := e.Campaign(actx, "candidate-"+strconv.Itoa(i))
			cancel()
			if ctx.Err() != nil {
				if err == nil {
					_ = t.Unlock(context.Background())
				}
				return
			}
			counts["election"].done(err)
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				return
			}
			time.Sleep(time.Duration(20+rng.IntN(30)) * time.Millisecond)
			if err := t.Unlock(ctx); err != nil && ctx.Err() == nil {
				counts["election"].fail(fmt.Errorf("resign: %w", err))
			}
		}
	}
	for ctx.Err() == nil {
		loop()
	}
}

func sampleNow(ctx context.Context, admins []*redis.Client) Sample {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := Sample{RSSMB: float64(proc.StatusKB(0, "VmRSS")) / 1024, HeapMB: float64(ms.HeapInuse) / (1 << 20),
		Goroutines: runtime.NumGoroutine(), Sockets: openSockets()}
	for _, a := range admins {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		n, err := a.DBSize(cctx).Result()
		cancel()
		if err != nil {
			n = -1
		}
		s.Keys = append(s.Keys, int(n))
	}
	return s
}

// openSockets counts this process's file descriptors that are sockets.
func openSockets() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

func keysWithoutTTL(ctx context.Context, c *redis.Client) (int, error) {
	n := 0
	it := c.Scan(ctx, 0, "*", 500).Iterator()
	for it.Next(ctx) {
		d, err := c.PTTL(ctx, it.Val()).Result()
		if err != nil {
			return 0, err
		}
		if d == -1 { // go-redis reports "no TTL" as -1 (ns)
			n++
		}
	}
	return n, it.Err()
}
