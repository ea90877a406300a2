package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/quorum"
)

// Hold says what a Locker's leases hold, for the history (history.Op's
// Locks, Shared and Role). A Locker that implements Describer reports it;
// others hold the run's one lock exclusively.
type Hold struct {
	// Locks are the names held (nil: the run's one lock).
	Locks []string
	// Shared: a read hold. The worker reads the resource and never
	// writes it.
	Shared bool
	// Role is the acquire's role for the kind's checks (checker.RoleWriter,
	// checker.RoleFair, or "").
	Role string
}

// Describer is the optional ability of a Locker to say what it holds.
type Describer interface {
	Hold() Hold
}

// Fanout is the optional ability of a Locker to serve several callers of
// one lock client (the batched workload): Caller(i) is the Locker of its
// i-th goroutine, i from 0 to Callers()-1, each run as its own worker.
type Fanout interface {
	Callers() int
	Caller(i int) Locker
}

// LockKind is a workload: which lock of the library the workers take and how.
type LockKind string

// The workloads, one per lock kind the library sells.
const (
	// Mutex: every worker takes one quorum.Mutex with a fixed lease.
	Mutex LockKind = "mutex"
	// RW: one quorum.RWMutex; even workers write, odd workers read.
	RW LockKind = "rw"
	// Fair: one quorum.FairMutex with a fixed lease; worker 0 leaves a
	// waiter that dies in line first (DyingWaiter).
	Fair LockKind = "fair"
	// Renewed: one quorum.Mutex whose leases the watchdog renews (no
	// lease time); a worker stops writing when Done closes.
	Renewed LockKind = "renewed"
	// All: quorum.MutexAll over the overlapping sets {a,b,c}, {c},
	// {a,b,c}, {a} (worker w takes set w mod 4; a one-name set is a plain
	// Mutex through MutexAll).
	All LockKind = "all"
	// Reentrant: each worker is an owner (WithOwner); its Lock takes the
	// lock, takes it again and gives the inner hold back, so its critical
	// section runs under the outer hold alone.
	Reentrant LockKind = "reentrant"
	// Batched: BatchCallers goroutines share each lock client (its
	// pipelines carry several callers' commands); even callers take the
	// shared name and write the resource, odd ones a name of their own.
	Batched LockKind = "batched"
	// Election: every worker campaigns in one quorum.Election (Campaign,
	// or TryCampaign), acts as leader — writes the resource with its term
	// number — while its term holds, then resigns; every worker also
	// follows the election with Observe.
	Election LockKind = "election"
	// TTLs: leases of different lifetimes held at once by one client,
	// whose one timer serves them all: each worker keeps a long fixed
	// lease on a name of its own (TTLsLong) and takes watchdog leases of a
	// short TTL (TTLsShort) on the shared name, working past that TTL, so
	// a renewal the timer serves late loses the lock to the next holder.
	TTLs LockKind = "ttls"
	// Guarded: one quorum.Mutex with a fixed lease, as Mutex; holders also
	// write through the project's Redis guard (Config.Guard) with their
	// token, twice per tenure.
	Guarded LockKind = "guarded"
)

// BatchCallers is the number of goroutines per client of the batched
// workload.
const BatchCallers = 8

// KindInfo describes a workload for listings.
type KindInfo struct {
	Kind    LockKind
	Summary string
	// Property is the checker property the workload adds to exclusion
	// ("" when exclusion and data integrity are all it promises).
	Property checker.Property
}

// Kinds lists the workloads in listing order.
var Kinds = []KindInfo{
	{Mutex, "workers take one Mutex with a fixed lease", ""},
	{RW, "readers and writers on one RWMutex: no writer beside any holder, no writer passed over on a free lock", checker.WriterProgress},
	{Fair, "waiters of one FairMutex: granted in arrival order", checker.FairOrder},
	{Renewed, "watchdog-renewed leases: the loss signal comes before another holder's tenure", checker.SignalFirst},
	{All, "MutexAll over overlapping name sets: all or none, exclusion per name", checker.AllOrNone},
	{Reentrant, "nested WithOwner holds: a partial release never frees the lock", ""},
	{TTLs, "one client holds a long fixed lease and short watchdog ones at once: every short lease is renewed in time (no overlap, loss told first)", checker.SignalFirst},
	{Guarded, "Mutex holders write through the Redis guard with their token: the guard accepts tokens in order", checker.GuardOrder},
	{Batched, fmt.Sprintf("%d goroutines per client on shared and distinct names: exclusion per name, each caller its own reply", BatchCallers), ""},
	{Election, "campaigners of one Election lead in turn, followers Observe: one leader per term, terms increase, a lost term is told, every term observed, a free election filled in time", checker.ElectionTerms},
}

// ParseKinds parses a comma-separated list of workloads ("" or "all":
// every one; the default of a matrix run is mutex alone).
func ParseKinds(list string) ([]LockKind, error) {
	if list == "" || list == "all" {
		out := make([]LockKind, len(Kinds))
		for i, k := range Kinds {
			out[i] = k.Kind
		}
		return out, nil
	}
	var out []LockKind
	for _, s := range strings.Split(list, ",") {
		k := LockKind(strings.TrimSpace(s))
		if !slices.ContainsFunc(Kinds, func(i KindInfo) bool { return i.Kind == k }) {
			return nil, fmt.Errorf("workload: unknown workload %q; known: %s", k, kindNames())
		}
		out = append(out, k)
	}
	return out, nil
}

func kindNames() string {
	var s []string
	for _, k := range Kinds {
		s = append(s, string(k.Kind))
	}
	return strings.Join(s, ", ")
}

// Watchdog reports whether k's leases are renewed by the watchdog whatever
// the scenario.
func (k LockKind) Watchdog() bool { return k == Renewed || k == Election }

// Work is the work time of k's critical sections under leases of lease
// (zero: the runner's default). Renewed leases hold past a third of the
// TTL, so the watchdog renews each at least once before its holder writes;
// election terms too (and last long enough for followers to see them).
func (k LockKind) Work(lease time.Duration) Range {
	switch k {
	case Renewed, Election:
		return Range{Min: lease/3 + lease/10, Max: lease / 2}
	case TTLs:
		// Past the short TTL: the holder keeps the lock only through
		// the watchdog's renewals.
		s := TTLsShort(lease)
		return Range{Min: s + s/5, Max: s + s/2}
	}
	return Range{}
}

// TTLsShort and TTLsLong are the lifetimes of the ttls workload's leases
// under a run's lease: the watchdog TTL of the leases a worker takes on
// the shared name (renewed every third of it), and the fixed lease time of
// the one it keeps on a name of its own (its end is due long after).
func TTLsShort(lease time.Duration) time.Duration { return lease / 4 }
func TTLsLong(lease time.Duration) time.Duration  { return 4 * lease }

// AcquireTimeout is the bound of each Lock call of k's workers: def, but
// for renewed leases, terms and the ttls kind's leases long enough for
// every other worker to hold once (workers × lease), as their critical
// sections last up to half a lease.
func (k LockKind) AcquireTimeout(def, lease time.Duration, workers int) time.Duration {
	if k == Renewed || k == Election || k == TTLs {
		return max(def, time.Duration(workers)*lease)
	}
	return def
}

// Clients is how many lock clients k's runners start for workers workers:
// the batched kind runs BatchCallers callers on each of half as many.
func (k LockKind) Clients(workers int) int {
	if k == Batched {
		return max(workers/2, 1)
	}
	return workers
}

// CounterLock is the lock name whose holders write the resource under k
// ("" = every exclusive holder).
func (k LockKind) CounterLock(name string) string {
	if k == Batched {
		return name
	}
	return ""
}

// QuorumKind returns worker's Locker of kind k over qc, on lock name (the
// all and batched kinds derive their names from it). leaseTime > 0 gives
// fixed leases; 0 leaves them to the watchdog (the ttls kind sizes its
// leases from it and needs it). For Batched the Locker is a
// Fanout of BatchCallers callers; worker is then the client's index.
func QuorumKind(qc *quorum.Client, k LockKind, name string, worker int, leaseTime time.Duration) (Locker, error) {
	var opts []quorum.Option
	if leaseTime > 0 && !k.Watchdog() {
		opts = append(opts, quorum.WithLeaseTime(leaseTime))
	}
	switch k {
	case Mutex, Renewed, Guarded, "":
		m, err := qc.Mutex(name, opts...)
		if err != nil {
			return nil, err
		}
		return Quorum(m), nil
	case RW:
		rw, err := qc.RWMutex(name, opts...)
		if err != nil {
			return nil, err
		}
		if worker%2 == 0 {
			return described{lockFuncs{rw.TryLock, rw.Lock}, Hold{Role: checker.RoleWriter}}, nil
		}
		return described{lockFuncs{rw.TryRLock, rw.RLock}, Hold{Shared: true}}, nil
	case Fair:
		f, err := qc.FairMutex(name, opts...)
		if err != nil {
			return nil, err
		}
		return described{lockFuncs{f.TryLock, f.Lock}, Hold{Role: checker.RoleFair}}, nil
	case All:
		names := AllNames(name, worker)
		m, err := qc.MutexAll(names, opts...)
		if err != nil {
			return nil, err
		}
		return described{Quorum(m), Hold{Locks: names}}, nil
	case Reentrant:
		m, err := qc.Mutex(name, append(opts, quorum.WithOwner(fmt.Sprintf("owner-%d", worker)))...)
		if err != nil {
			return nil, err
		}
		return reentrant{m}, nil
	case Batched:
		b := batch{}
		for i := range BatchCallers {
			n := name
			if i%2 == 1 {
				n = fmt.Sprintf("%s/c%d/%d", name, worker, i)
			}
			m, err := qc.Mutex(n, opts...)
			if err != nil {
				return nil, err
			}
			b = append(b, described{Quorum(m), Hold{Locks: []string{n}}})
		}
		return b, nil
	case Election:
		return newElection(qc, name, worker)
	case TTLs:
		if leaseTime <= 0 {
			return nil, errors.New("workload: the ttls workload needs the run's lease time")
		}
		short, err := qc.Mutex(name, quorum.WithTTL(TTLsShort(leaseTime)))
		if err != nil {
			return nil, err
		}
		long, err := qc.Mutex(fmt.Sprintf("%s/long/%d", name, worker), quorum.WithLeaseTime(TTLsLong(leaseTime)))
		if err != nil {
			return nil, err
		}
		return &ttls{short: short, long: long}, nil
	}
	return nil, fmt.Errorf("workload: unknown workload %q; known: %s", k, kindNames())
}

// AllNames is the name set worker w of the all workload takes: {a,b,c},
// {c}, {a,b,c}, {a} by w mod 4, each under name. Sets of three beside sets
// of one they contain: a grant on fewer than all of its names (two of
// three) overlaps the holder of the name it missed. (Beside sets of two,
// a grant on two of three names can never meet a holder: every set of two
// meets the two it holds.)
func AllNames(name string, w int) []string {
	sets := [][]string{{"a", "b", "c"}, {"c"}, {"a", "b", "c"}, {"a"}}
	var out []string
	for _, s := range sets[w%len(sets)] {
		out = append(out, name+"/"+s)
	}
	return out
}

type lockFuncs struct {
	try, lock func(context.Context) (*quorum.Lease, error)
}

func (l lockFuncs) TryLock(ctx context.Context) (Lease, error) { return wrap(l.try(ctx)) }
func (l lockFuncs) Lock(ctx context.Context) (Lease, error)    { return wrap(l.lock(ctx)) }

type described struct {
	Locker
	h Hold
}

func (d described) Hold() Hold { return d.h }

// reentrant takes its owner's lock twice and gives the inner hold back
// before handing out the outer lease.
type reentrant struct{ m *quorum.Mutex }

func (r reentrant) TryLock(ctx context.Context) (Lease, error) { return r.nest(ctx, r.m.TryLock) }
func (r reentrant) Lock(ctx context.Context) (Lease, error)    { return r.nest(ctx, r.m.Lock) }

func (r reentrant) nest(ctx context.Context, take func(context.Context) (*quorum.Lease, error)) (Lease, error) {
	outer, err := wrap(take(ctx))
	if err != nil {
		return nil, err
	}
	inner, err := r.m.TryLock(ctx)
	if err == nil {
		err = inner.Unlock(ctx)
	}
	if err != nil {
		// The owner holds the lock: a second hold must be granted. Not
		// ErrNotObtained: the outcome of the outer hold is what counts,
		// and it is given back.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = outer.Unlock(rctx)
		return nil, fmt.Errorf("workload: reentrant hold: %w", err)
	}
	return outer, nil
}

// ttls takes short watchdog leases while it keeps a long fixed lease of
// the same client: that lease is taken before each short one unless it
// still holds, and ends on its own.
type ttls struct {
	short, long *quorum.Mutex
	kept        *quorum.Lease
}

func (t *ttls) TryLock(ctx context.Context) (Lease, error) {
	t.keep(ctx)
	return wrap(t.short.TryLock(ctx))
}
func (t *ttls) Lock(ctx context.Context) (Lease, error) { t.keep(ctx); return wrap(t.short.Lock(ctx)) }

// keep takes the long lease when the worker holds none; a refusal (a fault
// in the way) leaves it to the next tenure.
func (t *ttls) keep(ctx context.Context) {
	if t.kept != nil && t.kept.Err() == nil {
		return
	}
	if l, err := t.long.TryLock(ctx); err == nil {
		t.kept = l
	}
}

type batch []Locker

func (b batch) Callers() int        { return len(b) }
func (b batch) Caller(i int) Locker { return b[i] }

// Fanout's Locker itself is never locked: Run expands it into its callers.
func (b batch) TryLock(context.Context) (Lease, error) { return nil, errFanout }
func (b batch) Lock(context.Context) (Lease, error)    { return nil, errFanout }

var errFanout = errors.New("workload: a batched Locker is used through its callers (Fanout)")

// Expand replaces every Fanout worker by its callers, numbered
// worker.ID·BatchCallers + i, sharing its Gate.
func Expand(workers []Worker) []Worker {
	var out []Worker
	for _, w := range workers {
		f, ok := w.Locker.(Fanout)
		if !ok {
			out = append(out, w)
			continue
		}
		for i := range f.Callers() {
			out = append(out, Worker{ID: w.ID*f.Callers() + i, Locker: f.Caller(i), Gate: w.Gate})
		}
	}
	return out
}

// DyingWaiter makes l's first Lock leave a waiter that dies in line first,
// as a process killed while queued (redisson#6150): it takes a ticket of
// fair lock name on every node, as FairMutex.Lock does first, and never
// places, refreshes nor leaves it. Until the entry's timeout (ttl, the
// client's TTL) passes, the dead waiter is first in line and nobody is
// granted; then l's own Lock waits in line as usual. The ticket is taken
// with the library's internal node, the code FairMutex.Lock runs, so the
// dead entry stays what a killed process leaves when the scripts change.
func DyingWaiter(l Locker, clients []redis.UniversalClient, name string, ttl time.Duration) (Locker, error) {
	d := &dying{Locker: l, name: name, ttl: ttl}
	for _, c := range clients {
		n, err := node.New(c)
		if err != nil {
			return nil, err
		}
		d.nodes = append(d.nodes, n)
	}
	return d, nil
}

type dying struct {
	Locker
	nodes []*node.Node
	name  string
	ttl   time.Duration
	died  bool
}

func (d *dying) Hold() Hold {
	if h, ok := d.Locker.(Describer); ok {
		return h.Hold()
	}
	return Hold{}
}

func (d *dying) Lock(ctx context.Context) (Lease, error) {
	if !d.died {
		d.died = true
		// One dying waiter per lock name, so the name names it; not its
		// address, which differs between runs of one seed.
		die(ctx, d.nodes, d.name, "dead|"+d.name, d.ttl)
	}
	return d.Locker.Lock(ctx)
}

// die puts waiter in the line of fair lock name on nodes as a waiter that
// took its ticket and died: its entry stays until ttl passes.
func die(ctx context.Context, nodes []*node.Node, name, waiter string, ttl time.Duration) {
	for _, n := range nodes {
		// A node that does not answer is a node the dead waiter never
		// reached.
		_, _ = n.TakeTicket(ctx, name, waiter, ttl)
	}
}
