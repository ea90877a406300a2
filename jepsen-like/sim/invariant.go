package sim

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// The RedLock invariant, judged at every step of a run from the nodes'
// own state (the simulation knows every node's keys and their expiry in
// virtual time): a lease that believes itself valid (now before its
// Until, Done not closed) is held by its owner on enough nodes, until its
// Until, that no other owner can gather the mode's quorum:
// n − quorum + 1 nodes (a majority for Redlock modes, the one node of a
// single node or group, one node for a lock that needs all of them). A
// crashed node counts with the keys it held when it crashed until they
// expire (it grants nothing while down); with restart detection, a
// restarted node counts for a lease that ends before it may vote again.
//
// MultiLock acquires on all its nodes, but its exclusion needs only one
// of them to keep the key: the catalog expects it safe where a fault
// takes one node's key (clock-jump, crash-restart-nopersist), so the
// invariant asks for what exclusion needs, not for what acquiring needs.
//
// Steps: every lease is checked when its Lock returns, after every fault
// is put in place or healed, and every invariantStep of virtual time.
// Checking "held until Until" rather than "held now" makes a periodic
// check exact for everything but a key taken away between two steps and
// given back before the next, which no fault of the catalog does.

// invariantStep is the period of the invariant's check (virtual time).
const invariantStep = 5 * time.Millisecond

// Invariant is what the RedLock invariant's check found in a run.
type Invariant struct {
	// Checks counts the checks of one lease at one step.
	Checks int
	// Violations counts the checks that found too few nodes; First says
	// what the first one saw.
	Violations int
	First      string
}

// watch is the set of leases a run checks.
type watch struct {
	e      *env
	mu     sync.Mutex
	leases map[*watchedLease]struct{}
	inv    Invariant
	// plantUntil, a test's planted error, makes every lease believe it
	// is valid for that much longer than the lock says.
	plantUntil time.Duration
}

type watchedLease struct {
	workload.Lease
	w      *watch
	owner  string
	key    string
	worker int
	done   <-chan struct{}
}

// Until is the lease's validity as the lock says, plus a planted error.
func (l *watchedLease) Until() time.Time {
	u := l.Lease.Until()
	if u.IsZero() {
		return u
	}
	return u.Add(l.w.plantUntil)
}

// Done is the lease's loss signal (workload.Signaller), when it has one.
func (l *watchedLease) Done() <-chan struct{} { return l.done }

// Unlock ends the watch: a holder that gives the lock back no longer
// believes it holds it.
func (l *watchedLease) Unlock(ctx context.Context) error {
	l.w.mu.Lock()
	delete(l.w.leases, l)
	l.w.mu.Unlock()
	return l.Lease.Unlock(ctx)
}

type watchedLocker struct {
	workload.Locker
	w      *watch
	key    string
	worker int
}

func (wl watchedLocker) TryLock(ctx context.Context) (workload.Lease, error) {
	return wl.add(wl.Locker.TryLock(ctx))
}

func (wl watchedLocker) Lock(ctx context.Context) (workload.Lease, error) {
	return wl.add(wl.Locker.Lock(ctx))
}

// add watches a new lease whose owner it can read (the quorum lock's; a
// lease of another implementation goes unwatched).
func (wl watchedLocker) add(l workload.Lease, err error) (workload.Lease, error) {
	if err != nil || l == nil {
		return l, err
	}
	owner, ok := ownerOf(l)
	if !ok {
		return l, err
	}
	wl2 := &watchedLease{Lease: l, w: wl.w, owner: owner, key: wl.key, worker: wl.worker}
	if s, ok := l.(workload.Signaller); ok {
		wl2.done = s.Done()
	}
	wl.w.mu.Lock()
	wl.w.leases[wl2] = struct{}{}
	wl.w.mu.Unlock()
	wl.w.check()
	if wl2.done == nil {
		// Keep the workload's view: a lease without a signal has none.
		return struct {
			workload.Lease
		}{wl2}, nil
	}
	return wl2, nil
}

// ownerOf reads the owner of a quorum lease (an unexported field: the
// owner is the hash field the nodes hold; TestInvariant fails if it moves: no lease would be checked).
func ownerOf(l workload.Lease) (string, bool) {
	v := reflect.ValueOf(l)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return "", false
	}
	f := v.Elem().FieldByName("owner")
	if !f.IsValid() || f.Kind() != reflect.String || f.String() == "" {
		return "", false
	}
	return f.String(), true
}

func newWatch(e *env) *watch { return &watch{e: e, leases: map[*watchedLease]struct{}{}} }

// wrap watches the leases of worker w's locker on lock name.
func (w *watch) wrap(l workload.Locker, worker int, name string) workload.Locker {
	return watchedLocker{Locker: l, w: w, key: node.DefaultPrefix + "{" + name + "}", worker: worker}
}

// run checks every invariantStep until ctx ends.
func (w *watch) run(ctx context.Context) {
	t := time.NewTicker(invariantStep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check()
		}
	}
}

// nodes are the nodes a lease's key lives on: every independent master,
// or the group's current master.
func (w *watch) nodes() []*Node {
	if w.e.group != nil {
		return []*Node{w.e.group.Master()}
	}
	return w.e.nodes
}

// check judges every watched lease now.
func (w *watch) check() {
	now := time.Now()
	w.mu.Lock()
	var ls []*watchedLease
	for l := range w.leases {
		ls = append(ls, l)
	}
	w.mu.Unlock()
	// In a set order: the first violation's words name one lease.
	slices.SortFunc(ls, func(a, b *watchedLease) int {
		return cmp.Or(cmp.Compare(a.worker, b.worker), a.Until().Compare(b.Until()), strings.Compare(a.owner, b.owner))
	})
	m := w.e.c.Mode
	nodes := w.nodes()
	need := len(nodes) - m.Quorum() + 1
	for _, l := range ls {
		u := l.Until()
		if u.IsZero() || !now.Before(u) || closed(l.done) {
			continue
		}
		held := 0
		var short []string
		for _, n := range nodes {
			until, ok := n.Holds(l.key, l.owner)
			switch {
			case ok && !until.Before(u):
				held++
			case m.RestartDetection == catalog.RestartAlways && n.Restarts() > 0 && !u.After(n.Started().Add(w.e.t.Lease)):
				held++ // restarted recently: it does not vote before u
			case ok:
				short = append(short, fmt.Sprintf("%s until %v", n.Name(), until.Sub(now)))
			default:
				short = append(short, n.Name()+" does not hold it")
			}
		}
		w.mu.Lock()
		w.inv.Checks++
		if held < need {
			w.inv.Violations++
			if w.inv.First == "" {
				w.inv.First = fmt.Sprintf("worker %d's lease (valid %v more) held on %d of %d nodes, %d needed: %v",
					l.worker, u.Sub(now), held, len(nodes), need, short)
			}
		}
		w.mu.Unlock()
	}
}

func (w *watch) result() Invariant {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inv
}

func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
