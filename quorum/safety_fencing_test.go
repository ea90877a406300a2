package quorum

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/leakcheck"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// tokenGrant is one successful acquisition in a shared history: the attempt
// started at start (TryLock called), the lease was handed out at acquired.
type tokenGrant struct {
	token           int64
	start, acquired time.Time
	who             string
}

// tokenViolations checks the fencing promise on a shared history: a lease
// handed out after another was handed out carries a larger token. For each
// grant b, every grant a whose lease was handed out before b's attempt
// started must have a smaller token. It returns the violating pairs (as
// text, at most 10).
func tokenViolations(h []tokenGrant) []string {
	byAcq := slices.Clone(h)
	slices.SortFunc(byAcq, func(a, b tokenGrant) int { return a.acquired.Compare(b.acquired) })
	byStart := slices.Clone(h)
	slices.SortFunc(byStart, func(a, b tokenGrant) int { return a.start.Compare(b.start) })
	var out []string
	j := 0
	var best tokenGrant // the largest token handed out so far
	for _, b := range byStart {
		for j < len(byAcq) && byAcq[j].acquired.Before(b.start) {
			if byAcq[j].token > best.token || best.who == "" {
				best = byAcq[j]
			}
			j++
		}
		if best.who != "" && b.token <= best.token && len(out) < 10 {
			out = append(out, fmt.Sprintf("%s got token %d after %s had got %d", b.who, b.token, best.who, best.token))
		}
	}
	return out
}

func TestTokenViolationsChecker(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cases := []struct {
		name string
		h    []tokenGrant
		bad  int
	}{
		{"increasing", []tokenGrant{{1, at(0), at(1), "a"}, {2, at(2), at(3), "b"}, {3, at(4), at(5), "c"}}, 0},
		{"concurrent attempts may come in any order", []tokenGrant{{2, at(0), at(5), "a"}, {1, at(1), at(3), "b"}}, 0},
		{"equal token later", []tokenGrant{{1, at(0), at(1), "a"}, {1, at(2), at(3), "b"}}, 1},
		{"smaller token later", []tokenGrant{{5, at(0), at(1), "a"}, {6, at(2), at(3), "b"}, {4, at(4), at(5), "c"}}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tokenViolations(tc.h); len(got) != tc.bad {
				t.Fatalf("violations %v, want %d", got, tc.bad)
			}
		})
	}
}

// contendFenced runs goroutines on several clients acquiring name with fencing
// until stop is closed, counting grants in grants. A quarter of the tries run under a deadline of a
// few milliseconds, so acquisitions fail part-way (some nodes granted, the
// fence write-back cut short). It returns the shared history and how many
// tries failed.
func contendFenced(t *testing.T, clients []*Client, perClient int, name string, grants *atomic.Int64, stop <-chan struct{}) ([]tokenGrant, int64) {
	t.Helper()
	var (
		mu      sync.Mutex
		history []tokenGrant
		failed  atomic.Int64
		wg      sync.WaitGroup
	)
	for ci, c := range clients {
		m := mustMutex(t, c, name)
		for g := range perClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				who := fmt.Sprintf("client %d goroutine %d", ci, g)
				for {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithCancel(context.Background())
					if rand.N(4) == 0 {
						ctx, cancel = context.WithTimeout(context.Background(), time.Duration(1+rand.N(4))*time.Millisecond)
					}
					start := time.Now()
					l, err := m.TryLock(ctx)
					cancel()
					if err != nil {
						failed.Add(1)
						// Back off at random, as Lock does after a split
						// vote, so that some tries win.
						time.Sleep(time.Duration(2+rand.N(18)) * time.Millisecond)
						continue
					}
					mu.Lock()
					history = append(history, tokenGrant{token: l.Token(), start: start, acquired: time.Now(), who: who})
					mu.Unlock()
					grants.Add(1)
					time.Sleep(time.Duration(rand.N(500)) * time.Microsecond) // the holder's work
					_ = l.Unlock(context.Background())
				}
			}()
		}
	}
	<-stop
	wg.Wait()
	return history, failed.Load()
}

// Fencing tokens on 5 nodes, 3 clients × 3 goroutines contending, a quarter
// of the tries cut short: every token handed out is larger than every token
// handed out before the attempt started (checked on the shared history),
// also while a node is paused and when a node with appendfsync always is
// killed and restarted during the run.
func TestFencingTokensSharedHistory(t *testing.T) {
	cases := []struct {
		name  string
		cfg   localredis.Config
		fault func(t *testing.T, s *localredis.Server)
	}{
		{"steady", localredis.Config{}, nil},
		{"one node paused", localredis.Config{}, func(t *testing.T, s *localredis.Server) {
			if err := s.Pause(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(400 * time.Millisecond) // the fault: frozen across several attempts
			_ = s.Resume()
		}},
		{"one node killed and restarted with appendfsync always", localredis.Config{Persistence: localredis.AOFAlways}, func(t *testing.T, s *localredis.Server) {
			if err := s.Kill(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(100 * time.Millisecond) // the fault: down across several attempts
			if err := s.Restart(context.Background()); err != nil {
				t.Error(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != nil {
				// Registered first, so it runs after the clients are
				// closed: go-redis re-dials a node that refused
				// connections from a goroutine that sleeps 1 s between
				// tries and ends at its next look at the closed pool.
				// Nothing tells when it ends but its absence: wait for
				// the goroutines, so a later test's leak check does not
				// see them.
				t.Cleanup(func() { leakcheck.Wait(5 * time.Second) })
			}
			servers := make([]*localredis.Server, 5)
			for i := range servers {
				cfg := tc.cfg
				if cfg.Persistence == localredis.AOFAlways {
					// fsync on every write: keep the files in memory
					// (tmpfs) so the test measures the lock, not the disk.
					cfg.Dir = tmpfsDir(t)
				}
				servers[i] = localredis.StartT(t, cfg)
			}
			var qcs []*Client
			for range 3 {
				qcs = append(qcs, newClient(t, testutil.Clients(t, servers, nil), WithTTL(2*time.Second), WithFencing(true), WithAttemptTimeout(100*time.Millisecond)))
			}
			stop := make(chan struct{})
			var grants atomic.Int64
			go func() {
				// Run until 20 grants before the fault and 20 after it
				// (or 6 s): the fault hits a lock in use.
				defer close(stop)
				deadline := time.Now().Add(6 * time.Second)
				until := func(n int64) {
					for grants.Load() < n && time.Now().Before(deadline) {
						time.Sleep(5 * time.Millisecond) // poll: the workers count their grants
					}
				}
				until(20)
				if tc.fault != nil {
					tc.fault(t, servers[rand.N(len(servers))])
				}
				until(grants.Load() + 20)
			}()
			history, failed := contendFenced(t, qcs, 3, "tokens", &grants, stop)
			t.Logf("%d grants, %d failed tries, last token %d", len(history), failed, slices.MaxFunc(append(history, tokenGrant{}), func(a, b tokenGrant) int { return int(a.token - b.token) }).token)
			if len(history) < 20 || failed == 0 {
				t.Fatalf("the run did not exercise the lock: %d grants, %d failures", len(history), failed)
			}
			if v := tokenViolations(history); len(v) > 0 {
				t.Fatalf("fencing tokens went back: %v", v)
			}
		})
	}
}

// Restart every node without persistence: the counters come back empty
// and start again from the node's clock in microseconds, so the next token
// is still larger than the last one handed out (on one machine's clock;
// persistence is what makes it hold whatever the clocks do). Counters that
// started again from 0, as before the clock seed, would go back: the
// checker above sees that.
func TestFencingWithoutPersistence(t *testing.T) {
	servers, clients := testutil.Servers(t, 3, localredis.Config{Persistence: localredis.NoPersistence})
	// Young nodes without persistence would sit out the TTL under the
	// default restart detection; this test is about the counters.
	c := newClient(t, clients, WithFencing(true), WithRestartDetection(false))
	m := mustMutex(t, c, "amnesia")
	ctx := t.Context()
	var h []tokenGrant
	take := func(who string) {
		start := time.Now()
		l, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h = append(h, tokenGrant{token: l.Token(), start: start, acquired: time.Now(), who: who})
		_ = l.Unlock(ctx)
	}
	for range 3 {
		take("before the crash")
	}
	for _, s := range servers {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := s.Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
	take("after the crash")
	if v := tokenViolations(h); len(v) > 0 {
		t.Fatalf("tokens %v after restarting every node without persistence: want them still increasing (clock seed), got %v", h, v)
	}
	if h[0].token < time.Now().Add(-time.Hour).UnixMicro() {
		t.Errorf("first token %d: want a counter seeded from the node's clock in microseconds", h[0].token)
	}
	// A counter that starts again from a small number goes back (from 2^32:
	// below it the library seeds a counter from the clock again).
	for _, rc := range clients {
		if err := rc.Set(ctx, "quorumlock:{amnesia}:fence", int64(1)<<32, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	take("after the counters went back")
	if v := tokenViolations(h); len(v) == 0 {
		t.Fatalf("tokens %v after the counters were reset: expected the checker to see them go back", h)
	}
}

// tmpfsDir is a data directory in memory (/dev/shm) when there is one, else
// "" (a temporary directory on disk).
func tmpfsDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/dev/shm", "quorumlock-test-*")
	if err != nil {
		return ""
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// Fencing costs at most one extra round trip: counted on the servers, a
// fenced Lock+Unlock sends at most one more command per node than an
// unfenced one (the write-back; the counter itself is bumped inside the
// acquire script, and the write-back is skipped when a quorum of grants
// already reported the token). Unfenced, a node sees one SET (the fast
// path) and one release script.
func TestFencingOneExtraRoundTrip(t *testing.T) {
	servers, clients := cluster(t, 5)
	ctx := t.Context()
	calls := func() int64 {
		var total int64
		for _, s := range servers {
			rc := s.Client()
			info, err := rc.Info(ctx, "commandstats").Result()
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(info, "\n") {
				for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:", "cmdstat_fcall:", "cmdstat_set:"} {
					if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd+"calls="); ok {
						n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
						total += n
					}
				}
			}
		}
		return total
	}
	cost := func(opts ...Option) int64 {
		c := newClient(t, clients, opts...)
		m := mustMutex(t, c, "rt")
		key := c.nodes[0].Keys("rt").Lock
		// Unlock returns once a majority released; wait until every node
		// has, or the next round's SET NX finds the key on a slow node and
		// asks the acquire script (a refusal, not fencing's cost). A sleep
		// was too short on a loaded machine.
		settle := func() { testutil.WaitKeyGone(t, ctx, key, clients...) }
		once := func() {
			l, err := m.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			settle()
		}
		once() // loads the scripts
		before := calls()
		const rounds = 10
		for range rounds {
			once()
		}
		return (calls() - before) / rounds
	}
	plain, fenced := cost(WithFencing(false)), cost()
	t.Logf("commands per Lock+Unlock on 5 nodes: %d unfenced, %d fenced", plain, fenced)
	// commandstats also counts the SET a script runs: the write-back sets
	// the counter on a node whose own counter lags the token (counters
	// start at each node's clock, so they differ until written back).
	if plain != 10 || fenced < plain || fenced > plain+10 {
		t.Fatalf("commands per Lock+Unlock: %d unfenced (want 10), %d fenced (want 10..20)", plain, fenced)
	}
}
