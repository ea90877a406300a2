package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/ctxend"
	"github.com/quorumlock/quorumlock/internal/lockkeys"
	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/seeded"
	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// CellRun is one simulated run: a catalog mode under a scenario's faults.
type CellRun struct {
	Mode     catalog.Mode
	Scenario string // a scenario id of the catalog (Scenarios)
	Seed     uint64
	Timing   Timing
	// Faults, when not nil, replaces the scenario's plan (replay of a
	// shrunk list).
	Faults []Fault
	// ReplLag is a group's replication lag (default 2 ms).
	ReplLag time.Duration
	// plantUntil is a planted error for tests: every lease believes it is
	// valid this much longer than the lock says (see Invariant).
	plantUntil time.Duration
	// Workload is the lock kind the workers take (workload.Mutex when
	// empty).
	Workload workload.LockKind
}

// kind is the cell's workload driver.
func (c CellRun) kind() workload.LockKind {
	if c.Workload == "" {
		return workload.Mutex
	}
	return c.Workload
}

// modeName is the mode as rows show it: with the workload when it is not
// the mutex workload (as the matrix names it).
func (c CellRun) modeName() string {
	if k := c.kind(); k != workload.Mutex {
		return c.Mode.ID + "/" + string(k)
	}
	return c.Mode.ID
}

// Faults returns the cell's fault list: its own, or the plan's from the seed.
func (c CellRun) PlannedFaults() ([]Fault, error) {
	if c.Faults != nil {
		return c.Faults, nil
	}
	s, ok := catalog.FindScenario(Scenarios, c.Scenario)
	if !ok {
		if s, ok := catalog.FindScenario(catalog.Scenarios, c.Scenario); ok {
			_, why := s.RunsOn(catalog.Sim)
			return nil, fmt.Errorf("sim: scenario %q is not simulated: %s", c.Scenario, why)
		}
		return nil, fmt.Errorf("sim: unknown scenario %q", c.Scenario)
	}
	return s.Faults(c.Mode, c.timing(), rand.New(rand.NewPCG(c.Seed, 0x706c616e))), nil
}

func (c CellRun) timing() Timing {
	t := c.Timing
	if t.Workers <= 0 {
		t.Workers = DefaultTiming.Workers
	}
	if t.Lease <= 0 {
		t.Lease = DefaultTiming.Lease
	}
	if t.Duration <= 0 {
		t.Duration = DefaultTiming.Duration
	}
	return t
}

// CellResult is what one simulated run produced.
type CellResult struct {
	History history.History
	Faults  []Fault
	// Stray are lock keys left without expiry on some node at the end.
	Stray []string
	// Wall is the wall time of the run (without the check).
	Wall time.Duration
	// Invariant is what the RedLock invariant's check found.
	Invariant Invariant
	// Trace is the hash of the run's event trace: the same for two runs
	// that did the same thing.
	Trace TraceHash
	// Panics are the library's panics in the workers (a failed run, not
	// an error; see workload.SplitPanics).
	Panics []*workload.PanicError
}

// env is a running simulation.
type env struct {
	c      CellRun
	t      Timing
	nw     *Net
	nodes  []*Node // independent masters
	group  *Group
	rec    *history.Recorder
	gates  *gates
	stall  *stall
	watch  *watch
	driftF float64
	ctx    context.Context // ends with the run

	mu      sync.Mutex
	closers []func()
}

// allNodes are every node of the run (a group's both).
func (e *env) allNodes() []*Node {
	if e.group != nil {
		return e.group.Nodes()
	}
	return e.nodes
}

// lockNode returns the node a fault on lock node i strikes (a group: its
// current master).
func (e *env) lockNode(i int) *Node {
	if e.group != nil {
		return e.group.Master()
	}
	return e.nodes[i%len(e.nodes)]
}

func (e *env) workerName(w int) string { return fmt.Sprintf("w%d", w) }

// addrs are worker w's lock node addresses.
func (e *env) addrs(w int, split bool) []string {
	if e.group != nil {
		if split && w%2 == 0 {
			return []string{e.group.Name() + "-a"}
		}
		return []string{e.group.Name()}
	}
	out := make([]string, len(e.nodes))
	for i, n := range e.nodes {
		out[i] = n.Name()
	}
	return out
}

// Simulate runs c. It must be called inside a testing/synctest bubble
// (every timer of the run is then virtual); Run does that.
func Simulate(c CellRun) (CellResult, error) {
	start := time.Now()
	t := c.timing()
	faults, err := c.PlannedFaults()
	if err != nil {
		return CellResult{}, err
	}
	clock := newStampClock()
	e := &env{c: c, t: t, nw: NewNet(c.Seed), rec: history.NewRecorder(clock)}
	e.nw.trace = newTrace()
	e.nw.instants = newInstants()
	defer e.nw.instants.close()
	e.rec.SetMeta("mode", c.Mode.ID)
	e.rec.SetMeta("workload", string(c.kind()))
	e.rec.SetMeta("scenario", c.Scenario)
	e.rec.SetMeta("seed", fmt.Sprint(c.Seed))
	e.rec.SetMeta("backend", "sim")
	if c.Mode.Group {
		lag := c.ReplLag
		if lag <= 0 {
			lag = 2 * time.Millisecond
		}
		e.group = NewGroup(e.nw, "g0", lag)
	} else {
		for i := range c.Mode.Masters {
			e.nodes = append(e.nodes, NewNode(e.nw, fmt.Sprintf("n%d", i)))
		}
	}
	if sc, ok := Scenario(c.Scenario); ok && sc.Persistence == localredis.AOFAlways {
		for _, n := range e.allNodes() {
			n.SetPersistence(true)
		}
	}
	defer func() {
		if e.group != nil {
			e.group.Close()
		}
		for _, n := range e.nodes {
			n.Close()
		}
	}()

	split, watchdog := false, false
	if sc, ok := Scenario(c.Scenario); ok {
		watchdog = sc.Watchdog
	}
	for _, f := range faults {
		switch f.Kind {
		case Failover:
			split = true
		case Isolate:
			watchdog = true
		case ClockRate:
			e.driftF = 0.1
		}
	}
	e.gates = &gates{}
	e.stall = &stall{}
	e.watch = newWatch(e)
	e.watch.plantUntil = c.plantUntil

	var res *resource.Counter
	if c.Mode.Fencing {
		res = resource.NewFenced(e.rec)
	} else {
		res = resource.NewUnfenced(e.rec)
	}
	if err := e.presetFences(); err != nil {
		return CellResult{}, err
	}
	var workers []workload.Worker
	for w := range c.kind().Clients(t.Workers) {
		l, err := e.locker(w, "sim", e.addrs(w, split), watchdog, true)
		if err != nil {
			e.closeAll()
			return CellResult{}, err
		}
		workers = append(workers, workload.Worker{ID: w, Locker: l, Gate: e.gates.For(w)})
	}

	ctx, cancel := context.WithTimeout(context.Background(), t.Duration)
	e.ctx = ctx
	var nemesis sync.WaitGroup
	for i, f := range faults {
		nemesis.Go(func() { e.inject(i, f) })
	}
	nemesis.Go(func() { e.watch.run(ctx) })
	// Reads cost no time here: followers read more often than on real
	// processes (more chances to read a value that a later read misses),
	// and five times as often as leaders proclaim, so a node that missed
	// a Proclaim is read before the next one reaches it.
	wc := workload.Config{Seed: c.Seed, CounterLock: c.kind().CounterLock("sim"), Work: c.kind().Work(t.Lease),
		AcquireTimeout: c.kind().AcquireTimeout(2*time.Second, t.Lease, t.Workers),
		Proclaims:      100 * time.Millisecond, LeaderReads: 20 * time.Millisecond}
	if c.kind() == workload.Guarded {
		wc.Guard = e.guard()
	}
	if sc, ok := Scenario(c.Scenario); ok && sc.Think > 0 {
		wc.Think = workload.Range{Min: sc.Think, Max: sc.Think * 3 / 2}
	}
	panics, err := workload.SplitPanics(workload.Run(ctx, e.rec, res, workers, wc))
	cancel()
	nemesis.Wait()
	// Unlock returns once a majority released: the other releases (and
	// late requests of the last attempts) are still on their way. Let them
	// land (virtual time: free) before looking for keys without expiry, or
	// a key deleted between the key listing and its TTL reads as one.
	time.Sleep(time.Second)
	stray := e.strays()
	e.closeAll()
	// go-redis retries a failed dial from a goroutine of its own once a
	// second until the pool is closed; let those see the close (virtual
	// time: free) so the bubble ends with no goroutine left.
	time.Sleep(2 * time.Second)
	h := e.rec.History()
	return CellResult{History: h, Faults: faults, Stray: stray, Wall: time.Since(start), Invariant: e.watch.result(), Trace: e.nw.trace.sum(h, clock), Panics: panics}, err
}

// locker builds one lock client for worker (or helper) name over addrs.
// Workers take the cell's workload's lock kind; helpers (hooked false) a
// plain Mutex.
func (e *env) locker(w int, lockName string, addrs []string, watchdog, hooked bool) (workload.Locker, error) {
	kind := workload.Mutex
	if hooked {
		kind = e.c.kind()
	}
	var clients []redis.UniversalClient
	for _, a := range addrs {
		cl := redis.NewClient(ClientOptions(e.nw, e.workerName(w), a))
		if hooked {
			cl.AddHook(e.stall.For(w))
		}
		clients = append(clients, cl)
	}
	// The client's id and its retries' jitter come from the seed, and
	// its label is its name (not host:pid): a replay sends the same bytes.
	opts := []quorum.Option{quorum.WithLabel(e.workerName(w)),
		seeded.Random(rand.NewPCG(e.c.Seed, streamID("client", e.workerName(w)))).(quorum.Option)}
	l, closeLock, err := e.c.Mode.Lock(catalog.LockParams{
		Name: lockName, LeaseTime: e.t.Lease, Watchdog: watchdog || kind.Watchdog(),
		DriftFactor: e.driftF, Clients: clients, Workload: kind, Worker: w, Options: opts,
	})
	// The RedLock invariant watches the leases of one plain lock name:
	// the mutex, renewed and reentrant workloads'. The other kinds' keys
	// (read-write shares, several names, a fair queue, a client's fan-out
	// of callers) are judged by the checker alone, and their Lockers keep
	// the abilities the workload reads (Describer, Fanout).
	_, described := l.(workload.Describer)
	_, fanout := l.(workload.Fanout)
	if hooked && err == nil && !described && !fanout {
		l = e.watch.wrap(l, w, lockName)
	}
	e.mu.Lock()
	e.closers = append(e.closers, func() {
		if closeLock != nil {
			_ = closeLock()
		}
		for _, cl := range clients {
			_ = cl.Close()
		}
	})
	e.mu.Unlock()
	return l, err
}

func (e *env) closeAll() {
	e.mu.Lock()
	cs := e.closers
	e.closers = nil
	e.mu.Unlock()
	for _, c := range slices.Backward(cs) {
		c()
	}
}

// strays are the lock keys without expiry on every node (the matrix's
// WithExpiry check).
func (e *env) strays() []string {
	var ns []*Node
	if e.group != nil {
		ns = e.group.Nodes()
	} else {
		ns = e.nodes
	}
	var out []string
	for _, n := range ns {
		m := n.Miniredis()
		for _, k := range m.Keys() {
			// TTL is 0 for a key without expiry and for a key gone since
			// Keys: only one that still exists counts.
			if m.TTL(k) <= 0 && m.Exists(k) && !lockkeys.Persistent(k) {
				out = append(out, n.Name()+":"+k)
			}
		}
	}
	return out
}

// sleep waits d or until the run ends; false when the run ended first.
func (e *env) sleep(d time.Duration) bool {
	if d <= 0 {
		return e.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		// At the run's last instant the run has ended, whichever timer
		// ran first.
		return !ctxend.Ended(e.ctx)
	case <-e.ctx.Done():
		return false
	}
}

// inject runs fault i: waits for its time, puts it in place, records it,
// holds it and heals it. Heals happen even when the run ends first.
func (e *env) inject(i int, f Fault) {
	if !e.sleep(f.At) {
		return
	}
	name := fmt.Sprintf("%s#%d", f.Kind, i)
	holder, release := -1, func() {}
	if f.Held {
		var ok bool
		holder, release, ok = e.gates.catch(e.ctx)
		if !ok {
			return
		}
		defer release()
	}
	if f.Kind == ClientHold {
		name = checker.HeldSection
	}
	if f.Kind == ExpiryRace {
		e.expiryRace(i, f)
		return
	}
	if f.Kind == Stall {
		e.stallFault(i, f)
		return
	}
	e.rec.NemesisStart(name).Ok()
	heal := e.apply(f, holder)
	e.watch.check()
	switch {
	case f.Held && f.Hold > f.D:
		// The fault lasts while the holder is held (D), or Hold if longer.
		time.Sleep(f.D)
		release()
		time.Sleep(f.Hold - f.D)
	case f.Held:
		// Heal, then let the holder go (the deferred release): at one
		// instant, in that order, not in the scheduler's.
		time.Sleep(f.D)
	default:
		time.Sleep(f.Hold)
	}
	heal()
	e.watch.check()
	e.rec.NemesisEnd(name).Ok()
}

// apply puts f in place and returns its heal.
func (e *env) apply(f Fault, holder int) func() {
	nodes := make([]*Node, len(f.Nodes))
	for i, n := range f.Nodes {
		nodes[i] = e.lockNode(n)
	}
	links := func(set func(l *Link)) func() {
		for w := range e.t.Workers {
			for _, n := range nodes {
				l := e.nw.LinkOf(e.workerName(w), n.Name())
				set(&l)
				e.nw.SetLink(e.workerName(w), n.Name(), l)
			}
		}
		return func() {
			for w := range e.t.Workers {
				for _, n := range nodes {
					e.nw.SetLink(e.workerName(w), n.Name(), Link{})
				}
			}
		}
	}
	switch f.Kind {
	case Partition:
		return links(func(l *Link) { l.CutRequests, l.CutReplies = true, true })
	case SplitSides:
		n := len(e.nodes)
		q := n/2 + 1
		cut := func(w, i int) bool {
			if w%2 == 0 {
				return i >= q
			}
			return i < n-q
		}
		set := func(down bool) {
			for w := range e.t.Workers {
				for i, nd := range e.nodes {
					if cut(w, i) {
						e.nw.SetLink(e.workerName(w), nd.Name(), Link{CutRequests: down, CutReplies: down})
					}
				}
			}
		}
		set(true)
		return func() { set(false) }
	case ReplyLoss:
		return links(func(l *Link) { l.CutReplies = true })
	case UnlockLoss:
		return links(func(l *Link) {
			if f.Late > 0 {
				l.UnlockDelay = f.Late
			} else {
				l.DropUnlocks = true
			}
		})
	case Latency:
		return links(func(l *Link) { l.Delay, l.Jitter = f.D/2, f.D })
	case PauseNode:
		for _, n := range nodes {
			n.Pause()
		}
		return func() {
			for _, n := range nodes {
				n.Resume()
			}
		}
	case Crash:
		// A rolling restart (Roll) strikes its groups in turn.
		for i, g := range f.RollGroups(len(e.nodes)) {
			if i > 0 {
				time.Sleep(f.Roll)
			}
			for _, n := range g {
				e.lockNode(n).Crash(f.Persist)
			}
			if f.Hold == 0 {
				for _, n := range g {
					e.lockNode(n).Restart()
				}
			}
		}
		return func() {
			for _, n := range nodes {
				n.Restart()
			}
		}
	case ClockJump:
		for _, n := range nodes {
			n.Jump(f.D)
		}
		return func() {}
	case ClockRate:
		for _, n := range nodes {
			n.SetRate(f.Rate)
		}
		return func() {
			for _, n := range nodes {
				n.SetRate(1)
			}
		}
	case CutLink:
		if e.group == nil {
			return func() {}
		}
		e.group.Cut()
		return e.group.Heal
	case Failover:
		if e.group == nil {
			return func() {}
		}
		old := e.group.Failover()
		return func() { e.group.Rejoin(old) }
	case Isolate:
		var all []*Node
		if e.group != nil {
			all = e.group.Nodes()
		} else {
			all = e.nodes
		}
		for _, n := range all {
			e.nw.SetLink(e.workerName(holder), n.Name(), Link{CutRequests: true, CutReplies: true})
		}
		return func() {
			for _, n := range all {
				e.nw.SetLink(e.workerName(holder), n.Name(), Link{})
			}
		}
	}
	return func() {}
}

// stallFault arms the stall for up to Hold; once it caught a worker's
// grant, the next worker to hold the lock (after the stalled one's keys
// expired) stays in its critical section for 3/4 of a lease, so that the
// stalled client's Lock returns while someone holds: a lock that hands out
// the stale grant shows two tenures at once.
func (e *env) stallFault(i int, f Fault) {
	caught := e.stall.arm(f.D)
	wait := f.Hold
	if wait <= 0 {
		wait = e.t.Lease
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var w int
	select {
	case w = <-caught:
	case <-t.C:
		e.stall.disarm()
		return
	case <-e.ctx.Done():
		e.stall.disarm()
		return
	}
	name := fmt.Sprintf("client-stall(worker %d)#%d", w, i)
	e.rec.NemesisStart(name).Ok()
	h := Fault{Kind: ClientHold, D: e.t.Lease * 3 / 4}
	held := make(chan struct{})
	go func() {
		defer close(held)
		if _, release, ok := e.gates.catch(e.ctx); ok {
			e.rec.NemesisStart(checker.HeldSection).Ok()
			time.Sleep(h.D)
			e.rec.NemesisEnd(checker.HeldSection).Ok()
			release()
		}
	}()
	time.Sleep(f.D)
	e.rec.NemesisEnd(name).Ok()
	<-held
}

// expiryRace: a crashed holder's lock (the fast path's SET NX PX, D long)
// on every lock node, contended by a TryLock that arrives in the key's
// last millisecond; the contender abandons what it gets.
func (e *env) expiryRace(i int, f Fault) {
	name := fmt.Sprintf("race-%d", i)
	ghost := 100 + i
	// The race is about one millisecond, and a link's drawn delay is up to
	// 0.8 ms each way: the contender's script, which follows its refused
	// SET NX, would reach the node after the key expired. The holder and
	// the contender reach the nodes directly (as the matrix's race does,
	// without the proxies).
	for _, a := range e.addrs(0, false) {
		e.nw.SetBaseLink(e.workerName(ghost), a, Link{})
		e.nw.SetBaseLink(e.workerName(ghost+100), a, Link{})
	}
	var nodes []*node.Node
	for _, a := range e.addrs(0, false) {
		cl := redis.NewClient(ClientOptions(e.nw, e.workerName(ghost), a))
		n, err := node.New(cl)
		if err != nil {
			_ = cl.Close()
			continue
		}
		nodes = append(nodes, n)
		e.mu.Lock()
		e.closers = append(e.closers, func() { _ = n.Close(); _ = cl.Close() })
		e.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.t.Lease)
	defer cancel()
	for _, n := range nodes {
		_, _, _, _ = n.Lock(name, "ghost", "g", false).Acquire(ctx, f.D)
	}
	// The key's last millisecond: PTTL answers 0.
	time.Sleep(f.D - 500*time.Microsecond)
	l, err := e.locker(ghost+100, name, e.addrs(0, false), false, false)
	if err == nil {
		_, _ = l.TryLock(ctx) // abandoned
	}
}

// gates pause or hold workers in their critical section on a fault's
// behalf.
type gates struct {
	mu      sync.Mutex
	waiting []*catcher
}

type catcher struct {
	caught  chan int
	release chan struct{} // closed when the worker may go on
}

// catch waits until a worker passes its gate and holds it there until
// release is called (or the run ends); it returns the worker. The fault
// releases the worker itself, not a timer of the gate's: a heal and the
// worker's next step at one instant then happen in that order.
func (g *gates) catch(ctx context.Context) (int, func(), bool) {
	c := &catcher{caught: make(chan int, 1), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(c.release) }) }
	g.mu.Lock()
	g.waiting = append(g.waiting, c)
	g.mu.Unlock()
	select {
	case w := <-c.caught:
		return w, release, true
	case <-ctx.Done():
		g.mu.Lock()
		g.waiting = slices.DeleteFunc(g.waiting, func(x *catcher) bool { return x == c })
		g.mu.Unlock()
		select {
		case w := <-c.caught:
			return w, release, true
		default:
			return 0, release, false
		}
	}
}

func (g *gates) For(w int) workload.Gate { return gate{g: g, w: w} }

type gate struct {
	g *gates
	w int
}

func (g gate) Wait(ctx context.Context) error {
	g.g.mu.Lock()
	if len(g.g.waiting) == 0 {
		g.g.mu.Unlock()
		return nil
	}
	c := g.g.waiting[0]
	g.g.waiting = g.g.waiting[1:]
	g.g.mu.Unlock()
	c.caught <- g.w
	select {
	case <-c.release:
	case <-ctx.Done():
	}
	return nil
}

// stall holds, once armed, the first worker that receives a lock grant
// (a fast-path SET NX answered OK, or a script's answer led by 1) for d
// before the lock sees the answer, and every reply that worker receives
// until then: the matrix's slow-acquire, as a go-redis hook.
type stall struct {
	mu     sync.Mutex
	armed  bool
	d      time.Duration
	who    int
	until  time.Time
	caught chan int
}

// arm makes the next grant stall; the channel tells which worker.
func (s *stall) arm(d time.Duration) <-chan int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.d, s.caught = true, d, make(chan int, 1)
	return s.caught
}

func (s *stall) disarm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
}

// hold stalls worker w when cmds carry a grant to stall, or while w's
// stall lasts.
func (s *stall) hold(w int, cmds []redis.Cmder) {
	s.mu.Lock()
	now := time.Now()
	switch {
	case s.armed && isGrant(cmds):
		s.armed, s.who, s.until = false, w, now.Add(s.d)
		s.caught <- w
	case s.who != w || !now.Before(s.until):
		s.mu.Unlock()
		return
	}
	until := s.until
	s.mu.Unlock()
	time.Sleep(time.Until(until))
}

func isGrant(cmds []redis.Cmder) bool {
	for _, cmd := range cmds {
		c, ok := cmd.(*redis.Cmd)
		if !ok || c.Err() != nil {
			if b, ok := cmd.(*redis.BoolCmd); ok && b.Name() == "set" && b.Val() {
				return true
			}
			continue
		}
		switch c.Name() {
		case "set":
			if c.Val() == "OK" {
				return true
			}
		case "evalsha", "eval", "fcall":
			if v, ok := c.Val().([]any); ok && len(v) > 0 {
				if first, ok := v[0].(int64); ok && first == 1 {
					return true
				}
			}
		}
	}
	return false
}

func (s *stall) For(w int) redis.Hook { return stallHook{s, w} }

type stallHook struct {
	s *stall
	w int
}

func (h stallHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.s.hold(h.w, []redis.Cmder{cmd})
		return err
	}
}

func (h stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.s.hold(h.w, cmds)
		return err
	}
}
