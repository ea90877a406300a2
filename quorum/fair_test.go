package quorum

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

var (
	_ multilock.Locker = (*node.FairLock)(nil)
	_ multilock.Fencer = (*node.FairLock)(nil)
	_ checkedLocker    = (*node.FairLock)(nil) // the safety gate takes it
	_ handoffLocker    = (*FairMutex)(nil)
)

func mustFair(t *testing.T, c *Client, name string, opts ...Option) *FairMutex {
	t.Helper()
	f, err := c.FairMutex(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// fairGrant is one acquisition in a recorded history.
type fairGrant struct {
	worker int
	waiter string
	ticket int64
	token  int64
}

// before is the order the nodes' lines keep: by ticket, then waiter id.
func (g fairGrant) before(h fairGrant) bool {
	return g.ticket < h.ticket || (g.ticket == h.ticket && g.waiter < h.waiter)
}

// inLine polls every node until pred holds for its line, or fails.
// fairPlaced says whether a line holds exactly n waiters besides holder
// (whose entry stays until it unlocks or the entry times out), all with
// their ticket placed (none still taking one).
func fairPlaced(n int, holder string) func([]node.QueueEntry) bool {
	return func(q []node.QueueEntry) bool {
		q = slices.DeleteFunc(slices.Clone(q), func(e node.QueueEntry) bool { return e.Waiter == holder })
		return len(q) == n && !slices.ContainsFunc(q, func(e node.QueueEntry) bool { return e.Ticket == 0 })
	}
}

// fairOther is the first entry of a line that is not holder's.
func fairOther(q []node.QueueEntry, holder string) node.QueueEntry {
	i := slices.IndexFunc(q, func(e node.QueueEntry) bool { return e.Waiter != holder })
	return q[i]
}

func fairInLine(t *testing.T, c *Client, name string, what string, pred func([]node.QueueEntry) bool) [][]node.QueueEntry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lines := make([][]node.QueueEntry, len(c.nodes))
		all := true
		for i, n := range c.nodes {
			q, err := n.Queue(t.Context(), name)
			if err != nil {
				t.Fatal(err)
			}
			lines[i] = q
			if !pred(q) {
				all = false
			}
		}
		if all {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: lines never got there: %v", what, lines)
		}
		time.Sleep(10 * time.Millisecond) // poll: a line changes on the nodes with no event to wait on
	}
}

// Eight goroutines on three clients (own connections each) contend on one
// name over five nodes. Acquisitions happen in ticket order (checked on the
// recorded history), tenures never overlap, fencing tokens increase from
// holder to holder, and per-worker acquisition counts are within 10% of each
// other.
func TestFairMutexServesInTicketOrder(t *testing.T) {
	servers, _ := cluster(t, 5)
	const workers, total = 8, 8 * 30
	fms := make([]*FairMutex, 3)
	var (
		mu      sync.Mutex
		history []fairGrant
		tenures []tenure
		per     = make([]int, workers)
		count   int
	)
	// onGrant runs inside Lock right after the acquisition, so the history
	// is in acquisition order; which worker it was is filled in below.
	for i := range fms {
		c := newClient(t, testutil.Clients(t, servers, nil), WithTTL(2*time.Second), WithFencing(true))
		fms[i] = mustFair(t, c, "fifo")
		fms[i].onGrant = func(waiter string, ticket int64) {
			mu.Lock()
			history = append(history, fairGrant{worker: -1, waiter: waiter, ticket: ticket})
			mu.Unlock()
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := fms[w%len(fms)]
			for {
				l, err := f.Lock(ctx)
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				start := time.Now()
				mu.Lock()
				history[len(history)-1].worker = w
				history[len(history)-1].token = l.Token()
				done := count >= total
				if !done {
					count++
					per[w]++
				}
				mu.Unlock()
				time.Sleep(100 * time.Microsecond) // the holder's work, across which tenures would overlap if the lock let them
				mu.Lock()
				tenures = append(tenures, tenure{w, start, time.Now()})
				mu.Unlock()
				if err := l.Unlock(ctx); err != nil {
					t.Errorf("worker %d: Unlock: %v", w, err)
					return
				}
				if done {
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if n := overlaps(tenures); n != 0 {
		t.Fatalf("%d overlapping tenures", n)
	}
	for i := 1; i < len(history); i++ {
		if !history[i-1].before(history[i]) {
			t.Fatalf("acquisition %d (worker %d, ticket %d) came after ticket %d (worker %d): not in ticket order",
				i, history[i].worker, history[i].ticket, history[i-1].ticket, history[i-1].worker)
		}
		if history[i].token <= history[i-1].token {
			t.Fatalf("acquisition %d: fencing token %d after %d", i, history[i].token, history[i-1].token)
		}
	}
	lo, hi := slices.Min(per), slices.Max(per)
	t.Logf("%d acquisitions in ticket order; per worker %v", len(history), per)
	if float64(hi-lo) > 0.10*float64(hi) {
		t.Fatalf("per-worker acquisitions %v: min %d and max %d differ by more than 10%%", per, lo, hi)
	}
}

// TryLock never passes a waiter that is in line, and neither does Lock; a
// plain Mutex of the same name does not queue, so it does.
func TestFairMutexTryLockDoesNotJumpTheLine(t *testing.T) {
	_, clients := cluster(t, 5)
	c := newClient(t, clients)
	f := mustFair(t, c, "line")
	ctx := t.Context()
	// A waiter in line on every node while the lock is free: it took a
	// ticket and placed it, and is about to try.
	const waiter = "someone-in-line"
	var ticket int64
	for _, n := range c.nodes {
		v, err := n.TakeTicket(ctx, "line", waiter, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ticket = max(ticket, v)
	}
	for i, n := range c.nodes {
		l := n.FairLock("line", "o", fmt.Sprint("a", i), node.Waiter{ID: waiter, Ticket: ticket, Timeout: time.Minute}, node.Enqueue, false)
		if ok, _, _, err := l.Acquire(ctx, time.Second); !ok || err != nil {
			t.Fatalf("node %d: the waiter in line was not granted: %v %v", i, ok, err)
		}
		if ok, err := l.Release(ctx); !ok || err != nil { // its rollback: it keeps its place
			t.Fatal(ok, err)
		}
	}
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	plain := mustMutex(t, c, "line")
	tests := []struct {
		name    string
		lock    func() (*Lease, error)
		granted bool
	}{
		{"FairMutex.TryLock", func() (*Lease, error) { return f.TryLock(ctx) }, false},
		{"FairMutex.Lock", func() (*Lease, error) { return f.Lock(short()) }, false},
		{"Mutex.TryLock (does not queue)", func() (*Lease, error) { return plain.TryLock(ctx) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := tt.lock()
			if tt.granted {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				_ = l.Unlock(ctx)
				return
			}
			if !errors.Is(err, ErrNotObtained) {
				if l != nil {
					_ = l.Unlock(ctx)
				}
				t.Fatalf("granted past a waiter in line: %v", err)
			}
		})
	}
	// The waiter leaves: TryLock is granted.
	for _, n := range c.nodes {
		if err := n.Leave(ctx, "line", waiter, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	l, err := f.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with nobody in line: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// FairMutex goes through the client's observer like Mutex: attempts and
// acquisitions are reported under its name, a refused TryLock as contended.
func TestFairMutexObserved(t *testing.T) {
	_, clients := cluster(t, 3)
	rec := &recorder{}
	c := newClient(t, clients, WithObserver(rec))
	f := mustFair(t, c, "observed-fair")
	ctx := t.Context()
	l, err := f.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryLock on a held lock: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	acq := rec.of(observe.OpAcquire)
	if len(acq) != 2 || acq[0].Outcome != observe.OutcomeOK || acq[1].Outcome != observe.OutcomeContended || acq[0].Name != "observed-fair" {
		t.Fatalf("acquire events %+v; want OK then contended, named observed-fair", acq)
	}
	if len(rec.of(observe.OpAttempt)) < 2 || len(rec.of(observe.OpRelease)) != 1 {
		t.Fatalf("events %+v", rec.events)
	}
}

// A Lock's wake channel stays subscribed for the next Lock of the same
// handle (no SUBSCRIBE per Lock) and is given up after the queue timeout
// unused; concurrent Locks use channels of their own.
func TestFairMutexWakeChannelsReused(t *testing.T) {
	servers, clients := cluster(t, 3)
	const ttl = 500 * time.Millisecond
	c := newClient(t, clients, WithTTL(ttl))
	f := mustFair(t, c, "slots")
	ctx := t.Context()
	rc := servers[0].Client()
	t.Cleanup(func() { _ = rc.Close() })
	channels := func() []string {
		chs, err := rc.PubSubChannels(ctx, c.nodes[0].FairKeys("slots").Wake+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(chs)
		return chs
	}
	lockUnlock := func() {
		l, err := f.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lockUnlock()
	first := channels()
	lockUnlock()
	if got := channels(); len(first) != 1 || !slices.Equal(got, first) {
		t.Fatalf("wake channels %v after one Lock, %v after the next; want the same one", first, got)
	}
	// Two waiting at once (behind a holder, whose Lock has returned its
	// channel): the second one gets a channel of its own.
	l, err := f.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 2)
	for range 2 {
		go func() {
			l2, err := f.Lock(ctx)
			if err == nil {
				err = l2.Unlock(ctx)
			}
			got <- err
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(channels()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("wake channels %v with two waiters, want two", channels())
		}
		time.Sleep(10 * time.Millisecond) // poll: a subscription has no event to wait on
	}
	_ = l.Unlock(ctx)
	for range 2 {
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
	deadline = time.Now().Add(ttl + 5*time.Second)
	for len(channels()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("wake channels %v still subscribed long after the queue timeout", channels())
		}
		time.Sleep(20 * time.Millisecond) // poll: the channels are given up in the background
	}
}

// TestFairMutexHelperProcess is not a test: TestFairMutexKilledWaiter runs
// it in a child process as a waiter to kill -9.
func TestFairMutexHelperProcess(t *testing.T) {
	nodes := os.Getenv("QUORUMLOCK_FAIR_HELPER_NODES")
	if nodes == "" {
		return
	}
	ttl, _ := time.ParseDuration(os.Getenv("QUORUMLOCK_FAIR_HELPER_TTL"))
	c, err := Dial(nodes, WithTTL(ttl))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	f, _ := c.FairMutex(os.Getenv("QUORUMLOCK_FAIR_HELPER_NAME"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // if nobody kills it
	defer cancel()
	_, err = f.Lock(ctx)
	fmt.Fprintln(os.Stderr, "helper: Lock returned:", err)
	os.Exit(3)
}

// A waiter killed (kill -9, in its own process) while first in line stops
// blocking the others within its entry timeout: the waiter behind it gets
// the lock once the dead entry's deadline has passed.
func TestFairMutexKilledWaiter(t *testing.T) {
	servers, clients := cluster(t, 5)
	const ttl = 2 * time.Second // the queue timeout
	c := newClient(t, clients, WithTTL(ttl))
	f := mustFair(t, c, "kill")
	var holderID string
	f.onGrant = func(w string, _ int64) { holderID = w }
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	holder, err := f.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}

	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe, "-test.run=^TestFairMutexHelperProcess$", "-test.count=1")
	child.Env = append(os.Environ(),
		"QUORUMLOCK_FAIR_HELPER_NODES="+strings.Join(addrs, ","),
		"QUORUMLOCK_FAIR_HELPER_TTL="+ttl.String(),
		"QUORUMLOCK_FAIR_HELPER_NAME=kill")
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = child.Process.Kill()
			_ = child.Wait()
		}
	})
	// The child is in line on every node (its ticket placed).
	lines := fairInLine(t, c, "kill", "child in line", fairPlaced(1, holderID))
	dead := fairOther(lines[0], holderID).Waiter

	// A waiter behind it, in this process.
	c2 := newClient(t, testutil.Clients(t, servers, nil), WithTTL(ttl))
	f2 := mustFair(t, c2, "kill")
	var behind string
	f2.onGrant = func(w string, _ int64) { behind = w }
	got := make(chan error, 1)
	finished := make(chan struct{})
	t.Cleanup(func() { cancel(); <-finished }) // before the clients close
	go func() {
		defer close(finished)
		l, err := f2.Lock(ctx)
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	fairInLine(t, c, "kill", "waiter behind the child", fairPlaced(2, holderID))

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killed = true
	killedAt := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The lock is free, but the dead waiter is still first: nobody is granted
	// until its entry times out.
	gone := func(q []node.QueueEntry) bool {
		return !slices.ContainsFunc(q, func(e node.QueueEntry) bool { return e.Waiter == holderID })
	}
	for i, q := range fairInLine(t, c, "kill", "holder's entry gone", gone) {
		if len(q) == 0 || q[0].Waiter != dead {
			t.Fatalf("node %d: line %v after the unlock; want the dead waiter %s first", i, q, dead)
		}
	}
	select {
	case err := <-got:
		took := time.Since(killedAt)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("waiter behind the killed one got the lock %v after the kill (queue timeout %v)", took.Round(time.Millisecond), ttl)
	case <-time.After(ttl + 3*time.Second):
		t.Fatalf("the waiter behind a killed one was still blocked %v after the kill (queue timeout %v); child said:\n%s", ttl+3*time.Second, ttl, out.String())
	}
	if behind == "" || behind == dead {
		t.Fatalf("granted to %q, want the live waiter", behind)
	}
	fairInLine(t, c, "kill", "line empty", fairPlaced(0, ""))
}

// fairProxy forwards TCP to one node; Cut drops every connection and
// refuses new ones until Heal: a partition between one client and a node.
type fairProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newSwitchProxy(t *testing.T, target string) *fairProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &fairProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *fairProxy) Addr() string { return p.ln.Addr().String() }

func (p *fairProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			in.Close()
			continue
		}
		p.conns[in], p.conns[out] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(out, in)
		go pipe(in, out)
	}
}

func (p *fairProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *fairProxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *fairProxy) close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

// A waiter cut off from some nodes longer than its entry timeout: cut off
// from a minority (2 of 5) it keeps its place, as its entry lives on a
// majority; cut off from a majority (3 of 5) it loses its place, the
// waiter behind it goes first, and it takes a new ticket once it can reach
// a majority again.
func TestFairMutexPartitionedWaiter(t *testing.T) {
	tests := []struct {
		cut       int
		wantFirst string
	}{
		{cut: 2, wantFirst: "partitioned"},
		{cut: 3, wantFirst: "behind"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("cut-from-%d-of-5", tt.cut), func(t *testing.T) {
			servers, clients := cluster(t, 5)
			const ttl = time.Second // the queue timeout
			opts := []Option{WithTTL(ttl), WithRetryInterval(100 * time.Millisecond)}
			c := newClient(t, clients, opts...)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			hf := mustFair(t, c, "part")
			var holderID string
			hf.onGrant = func(w string, _ int64) { holderID = w }
			holder, err := hf.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}

			// The partitioned waiter reaches the nodes through proxies.
			proxies := make([]*fairProxy, len(servers))
			pclients := make([]redis.UniversalClient, len(servers))
			for i, s := range servers {
				proxies[i] = newSwitchProxy(t, s.Addr())
				rc := redis.NewClient(localredis.ClientOptions(proxies[i].Addr()))
				t.Cleanup(func() { _ = rc.Close() })
				pclients[i] = rc
			}
			type result struct {
				who    string
				ticket int64
				err    error
			}
			var (
				mu    sync.Mutex
				order []result
			)
			pc := newClient(t, pclients, opts...)
			bc := newClient(t, testutil.Clients(t, servers, nil), opts...)
			done := make(chan struct{}, 2)
			var wg sync.WaitGroup
			t.Cleanup(func() { cancel(); wg.Wait() }) // before the clients close
			wait := func(who string, f *FairMutex) {
				f.onGrant = func(_ string, ticket int64) {
					mu.Lock()
					order = append(order, result{who: who, ticket: ticket})
					mu.Unlock()
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { done <- struct{}{} }()
					l, err := f.Lock(ctx)
					if err != nil {
						mu.Lock()
						order = append(order, result{who: who, err: err})
						mu.Unlock()
						return
					}
					_ = l.Unlock(ctx)
				}()
			}
			wait("partitioned", mustFair(t, pc, "part"))
			lines := fairInLine(t, c, "part", "partitioned waiter in line", fairPlaced(1, holderID))
			first := fairOther(lines[0], holderID)
			wait("behind", mustFair(t, bc, "part"))
			fairInLine(t, c, "part", "second waiter in line", fairPlaced(2, holderID))

			for _, p := range proxies[:tt.cut] {
				p.Cut()
			}
			// Its entry times out on the nodes it cannot reach.
			for i, n := range c.nodes[:tt.cut] {
				deadline := time.Now().Add(5 * ttl)
				for {
					q, err := n.Queue(ctx, "part")
					if err != nil {
						t.Fatal(err)
					}
					if !slices.ContainsFunc(q, func(e node.QueueEntry) bool { return e.Waiter == first.Waiter }) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("node %d: the partitioned waiter's entry did not time out: %v", i, q)
					}
					time.Sleep(20 * time.Millisecond) // poll: the entry times out on the node's own clock
				}
			}
			if err := holder.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			// Wait for one of them to get the lock; then heal.
			<-done
			for _, p := range proxies {
				p.Heal()
			}
			<-done
			mu.Lock()
			defer mu.Unlock()
			for _, r := range order {
				if r.err != nil {
					t.Fatalf("%s: %v", r.who, r.err)
				}
			}
			if len(order) != 2 || order[0].who != tt.wantFirst {
				t.Fatalf("order %+v, want %s first", order, tt.wantFirst)
			}
			for _, r := range order {
				if r.who == "partitioned" {
					kept := r.ticket == first.Ticket
					if kept != (tt.cut < 3) {
						t.Fatalf("partitioned waiter got the lock with ticket %d (its first was %d); kept its place = %v, want %v",
							r.ticket, first.Ticket, kept, tt.cut < 3)
					}
				}
			}
			if order[0].ticket >= order[1].ticket {
				t.Fatalf("acquisitions not in ticket order: %+v", order)
			}
		})
	}
}
