package catalog

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/quorum"
)

// LockParams is what a LockFunc gets for one worker.
type LockParams struct {
	// Name is the lock's name (the same for every worker).
	Name string
	// LeaseTime is the lease time the workload runs with. Unless Watchdog
	// is set, leases are fixed (not renewed), so a paused holder's lease
	// expires.
	LeaseTime time.Duration
	// Watchdog asks for leases of LeaseTime renewed automatically while
	// held (quorum's default behaviour); locks without renewal ignore it.
	Watchdog bool
	// AttemptTimeout, if positive, replaces the lock's default attempt
	// timeout (Timing.AttemptTimeout).
	AttemptTimeout time.Duration
	// DriftFactor, if positive, replaces the lock's default clock drift
	// factor (scenarios about clock rates set it; locks without one ignore
	// it).
	DriftFactor float64
	// Workload is the lock kind the worker takes (workload.Mutex when
	// empty); only the quorum lock's modes (Ours) honour another.
	Workload workload.LockKind
	// Worker is the worker's index (the rw, all and reentrant workloads
	// give workers different roles; batched: the client's index).
	Worker int
	// Clients are the worker's own connections, one per lock node: every
	// independent master in order, or the group's master for a group.
	Clients []redis.UniversalClient
	// Options are added to the quorum lock's own (the simulation gives
	// each worker a seeded random source and a fixed label, so that a seed
	// replays); other locks ignore them.
	Options []quorum.Option
}

// LockFunc builds one worker's lock client. close releases what it made
// (not the redis clients, which the matrix closes).
type LockFunc func(p LockParams) (l workload.Locker, close func() error, err error)

// Mode is a lock configuration under test: a topology and a way to build
// each worker's lock over it.
type Mode struct {
	// ID names the mode on the command line and in reports.
	ID string
	// Summary says what it is in a sentence.
	Summary string
	// Masters is the number of independent masters; 0 when Group.
	Masters int
	// Group: one master + one replica; clients follow the master.
	Group bool
	// Fencing: the lock hands out fencing tokens and the workload's
	// resource checks them; otherwise the resource accepts every write.
	Fencing bool
	// Wait: a grant counts only once the group's replica acknowledged it
	// (WAIT); meaningful with Group.
	Wait bool
	// Majority: the lock needs a majority of the nodes (Redlock) rather
	// than all of them. Scenarios use it to judge what a lost key does.
	Majority bool
	// TunesDrift: the LockFunc honours LockParams.DriftFactor. The
	// clock-rate scenarios set the drift allowance they test and apply
	// only to such modes (a peer with its own fixed factor would be judged
	// against an allowance it does not have).
	TunesDrift bool
	// AbsoluteExpiry: the lock sends its keys' expiry as an absolute
	// wall-clock time read from the client's clock (SET … PXAT), not as a
	// TTL the node counts on its own clock (PX). The clock-offset scenario
	// tells the two apart.
	AbsoluteExpiry bool
	// FixedLease: the lock cannot renew a lease (no watchdog); scenarios
	// about renewal do not apply.
	FixedLease bool
	// LateLossSignal: the lock's renewal call may outlive the key it
	// renews (its deadline is a whole validity away) and the holder is
	// told of the loss only when that call fails. The renewal-hang
	// scenario shows it; elsewhere a late signal of such a mode is not
	// counted as a broken property.
	LateLossSignal bool
	// RestartDetection is the mode's restart detection, set explicitly
	// (the library's default changes between releases; a mode must not
	// drift with it).
	RestartDetection RestartDetection
	// QuickScenarios, if set, are the only scenarios the quick matrix runs
	// the mode in (nil: every scenario); the full matrix runs every one.
	QuickScenarios []string
	// Ours: the lock is this project's quorum lock (built by the
	// catalog): its waiting follows RetryInterval and AttemptTimeout, so
	// the wakeup bound applies (a peer waits its own way).
	Ours bool
	// Lock builds a worker's lock.
	Lock LockFunc
}

// RestartDetection is how a mode's lock treats restarted nodes.
type RestartDetection int

const (
	// RestartOff: a restarted node votes at once.
	RestartOff RestartDetection = iota
	// RestartAlways: every node that restarted (its run id changed) or is
	// younger than the largest TTL in use does not vote until it is older
	// (quorum.WithRestartDetection with its default delay).
	RestartAlways
)

func (r RestartDetection) String() string {
	if r == RestartAlways {
		return "restart detection (default delay)"
	}
	return "no restart detection"
}

// Nodes is the number of lock nodes a worker talks to.
func (m Mode) Nodes() int {
	if m.Group {
		return 1
	}
	return m.Masters
}

// waitTimeout is the WAIT timeout of single+wait: well below the per-node
// budget of one node (the attempt timeout, 250 ms by default).
const waitTimeout = 100 * time.Millisecond

// quorumMode is a mode of the quorum lock: its Lock is QuorumLock with
// the mode's fencing and restart detection set explicitly, then opts.
func quorumMode(m Mode, opts ...quorum.Option) Mode {
	m.Lock = QuorumLock(append(SafetyOptions(m), opts...)...)
	m.Ours = true
	return m
}

// SafetyOptions are the quorum options that set m's fencing and restart
// detection explicitly, whatever the library's defaults are. Every quorum
// mode's lock is built with them.
func SafetyOptions(m Mode) []quorum.Option {
	out := []quorum.Option{quorum.WithFencing(m.Fencing)}
	if m.RestartDetection == RestartAlways {
		out = append(out, quorum.WithRestartDetection(true))
	} else {
		out = append(out, quorum.WithRestartDetection(false))
	}
	return out
}

// RetryInterval is the quorum lock's retry interval in every runner (the
// waits in a cell are short).
const RetryInterval = 100 * time.Millisecond

// AttemptTimeout is the quorum lock's default attempt timeout
// (quorum.WithAttemptTimeout's default), which a cell keeps unless its
// timing sets one.
const AttemptTimeout = 250 * time.Millisecond

// StarveBound is how many acquires invoked after a waiter's may complete
// before it does (checker.WithStarveBound). A release wakes the
// longest-waiting client, which is passed over when a caller that was not
// waiting finds the lock free first, or, when its wake-up was lost (its
// client stopped listening just then), for up to one retry interval of
// hand-offs among the others: about a dozen in the herd cell. A lock
// whose waiters are never woken lets the looping workers pass them over
// hundreds of times.
const StarveBound = 30

// WakeupBound is how long a free lock may stay untaken while quorum
// locks of a cell wait for it (checker.WakeupBound of RetryInterval and
// AttemptTimeout): 370 ms.
var WakeupBound = checker.WakeupBound(RetryInterval, AttemptTimeout)

// FairBound is how long a fair lock's line may go without a grant while
// its waiters wait, with no fault (checker.WithFairBound), under leases of
// lease (also the client's TTL, so the queue-entry timeout): a dead
// waiter's entry lapses within one TTL, a holder lets go within its lease,
// and the next waiter takes the lock within the wakeup bound wakeup.
func FairBound(lease, wakeup time.Duration) time.Duration { return 2*lease + wakeup }

// QuorumLock returns the LockFunc of the quorum lock with opts. Every
// worker gets its own quorum.Client over its own connections, with a
// 100 ms retry interval (the waits in a runner's cell are short) and the
// lease time as TTL.
func QuorumLock(opts ...quorum.Option) LockFunc {
	return func(p LockParams) (workload.Locker, func() error, error) {
		all := append([]quorum.Option{quorum.WithRetryInterval(RetryInterval), quorum.WithTTL(p.LeaseTime)}, opts...)
		if p.AttemptTimeout > 0 {
			all = append(all, quorum.WithAttemptTimeout(p.AttemptTimeout))
		}
		if p.DriftFactor > 0 {
			all = append(all, quorum.WithDriftFactor(p.DriftFactor))
		}
		all = append(all, p.Options...)
		qc, err := quorum.New(p.Clients, all...)
		if err != nil {
			return nil, nil, err
		}
		lease := p.LeaseTime
		if p.Watchdog && p.Workload != workload.TTLs {
			// The ttls workload's shared-name leases are renewed anyway;
			// it sizes them from the lease time.
			lease = 0
		}
		l, err := workload.QuorumKind(qc, p.Workload, p.Name, p.Worker, lease)
		if err == nil && p.Workload == workload.Fair && p.Worker == 0 {
			l, err = workload.DyingWaiter(l, p.Clients, p.Name, p.LeaseTime)
		}
		if err != nil {
			_ = qc.Close()
			return nil, nil, err
		}
		return l, qc.Close, nil
	}
}

// Modes are the lock configurations of the matrix, in report order. Peers
// (redsync, redislock) are added by the bench module's runner with their
// own LockFunc; see Config.Modes.
var Modes = []Mode{
	quorumMode(Mode{ID: "single", Summary: "quorum lock on one Redis master (a plain single-instance lock)",
		Masters: 1, Majority: true, TunesDrift: true, Fencing: false, RestartDetection: RestartOff}),
	quorumMode(Mode{ID: "single+wait", Summary: "one master + one replica, a grant counts only after WAIT 1 acknowledges it (Redisson's recommendation)",
		Group: true, Wait: true, TunesDrift: true, Fencing: false, RestartDetection: RestartOff}, quorum.WithReplicaAck(1, waitTimeout)),
	quorumMode(Mode{ID: "failover", Summary: "one master + one asynchronous replica; clients follow the master across a failover",
		Group: true, TunesDrift: true, Fencing: false, RestartDetection: RestartOff}),
	quorumMode(Mode{ID: "redlock-3", Summary: "quorum lock, majority of 3 independent masters (Redlock)",
		Masters: 3, Majority: true, TunesDrift: true, Fencing: false, RestartDetection: RestartOff}),
	quorumMode(Mode{ID: "redlock-5", Summary: "quorum lock, majority of 5 independent masters (Redlock)",
		Masters: 5, Majority: true, TunesDrift: true, Fencing: false, RestartDetection: RestartOff}),
	quorumMode(Mode{ID: "redlock-5+fencing", Summary: "redlock-5 with fencing tokens, checked by the resource",
		Masters: 5, Majority: true, TunesDrift: true, Fencing: true, RestartDetection: RestartOff}),
	quorumMode(Mode{ID: "multilock-3", Summary: "quorum lock that needs all of 3 independent masters (Redisson's MultiLock)",
		Masters: 3, TunesDrift: true, Fencing: false, RestartDetection: RestartOff}, quorum.WithPolicy(quorum.All)),
	quorumMode(Mode{ID: "redlock-3+functions", Summary: "redlock-3 calling its scripts as Redis Functions (FCALL, quorum.WithFunctions), reloading the library on a node that lost it",
		Masters: 3, Majority: true, TunesDrift: true, Fencing: false, RestartDetection: RestartOff,
		QuickScenarios: []string{"baseline", "crash-restart-nopersist"}}, quorum.WithFunctions(true)),
	quorumMode(restartMode),
}

// FindMode returns the mode with the given id among modes.
func FindMode(modes []Mode, id string) (Mode, bool) {
	for _, m := range modes {
		if m.ID == id {
			return m, true
		}
	}
	return Mode{}, false
}

// SelectModes returns the modes named in a comma-separated list ("" or
// "all": every mode), in the list's order.
func SelectModes(all []Mode, list string) ([]Mode, error) {
	if list == "" || list == "all" {
		return append([]Mode(nil), all...), nil
	}
	var out []Mode
	for _, id := range strings.Split(list, ",") {
		id = strings.TrimSpace(id)
		m, ok := FindMode(all, id)
		if !ok {
			return nil, fmt.Errorf("catalog: unknown mode %q; known: %s", id, strings.Join(modeIDs(all), ", "))
		}
		out = append(out, m)
	}
	return out, nil
}

func modeIDs(ms []Mode) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// Quorum is how many of the mode's lock nodes must hold a lease's key for
// the lease to be valid: a majority for Redlock modes (1 for a single
// node or a group's master), every node for a lock that needs all of them
// (MultiLock).
func (m Mode) Quorum() int {
	n := m.Nodes()
	if m.Majority || m.Group {
		return n/2 + 1
	}
	return n
}
