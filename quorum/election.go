package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/fanout"
	"github.com/quorumlock/quorumlock/internal/node"
)

// Errors of an election.
var (
	// ErrNoLeader: a quorum of nodes answered and no leader holds the
	// election on a quorum of them.
	ErrNoLeader = errors.New("quorumlock: no leader")
	// ErrLeaderUnknown: too few nodes answered to tell whether there is a
	// leader, or who it is.
	ErrLeaderUnknown = errors.New("quorumlock: leader unknown: fewer than a quorum of nodes answered")
	// ErrResigned: the term ended by its Unlock (Term.Err, context.Cause
	// of Term.Context); a second Unlock's error wraps it too.
	ErrResigned = errors.New("quorumlock: resigned")
	// ErrNotPublished: a Proclaim reached fewer than a quorum of the nodes
	// that hold the term, so nothing was published: Term.Value keeps the
	// old value and no reader will ever see the new one. The error also
	// wraps ErrNotHeld.
	ErrNotPublished = errors.New("quorumlock: value not published")
	// ErrPublishUnfinished: a Proclaim's value is decided (Term.Value
	// returns it; no reader will see an older value once one saw it) but
	// had reached fewer than a quorum when Proclaim returned: nodes failed
	// between its two round trips. Readers see the old value or the new
	// one until a quorum has it: a reader that sees it writes it back, and
	// the next Proclaim supersedes it (Proclaim the same value to finish).
	ErrPublishUnfinished = errors.New("quorumlock: value decided but not yet on a quorum")
)

// errResignedTwice is a second Unlock's error of a term.
var errResignedTwice = fmt.Errorf("%w already", ErrResigned)

// ElectionPrefix starts the lock name of every election: the election
// "scheduler" is the lock "election:scheduler" (for admin's Inspect and
// ForceUnlock), so elections and locks never share keys.
const ElectionPrefix = "election:"

// Election is one named election on the client's quorum: immutable
// configuration, safe for concurrent use. Any number of campaigners (in
// this or other processes) may campaign; at most one holds a term at a
// time.
//
// An election is a lock (named ElectionPrefix + name) that is always
// fenced, whatever WithFencing says: the term number is the lock's fencing
// token, so terms strictly increase across leaders, and a resource that
// refuses writes carrying an older term (package guard) is safe even when
// a deposed leader has not yet noticed its loss. The leader's value is kept
// beside the lock on every node, renewed and removed with it.
type Election struct {
	c    *Client
	name string
	m    *Mutex
}

// Election returns the election called name. Of the options only WithTTL
// applies: how long a term lives on the nodes without renewal. A leader
// that dies is replaced at most this long (plus the retry interval when no
// follower hears of it) later; the watchdog renews every TTL/3. Default
// the client's TTL.
func (c *Client) Election(name string, opts ...Option) (*Election, error) {
	if name == "" {
		return nil, errors.New("quorumlock: empty election name")
	}
	cfg, err := lockOptions(opts)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.owner != "":
		return nil, errors.New("quorumlock: WithOwner does not apply to an election (a campaigner is its own owner)")
	case cfg.leaseTime != 0:
		return nil, errors.New("quorumlock: WithLeaseTime does not apply to an election (a term is renewed until it resigns)")
	}
	m, err := c.buildMutex([]string{ElectionPrefix + name}, opts, checkName)
	if err != nil {
		return nil, err
	}
	m.kind = electLock{}
	return &Election{c: c, name: name, m: m}, nil
}

// Campaign waits until this campaigner is elected or ctx ends, and returns
// its term with value published as the leader's. It waits as Mutex.Lock
// does: woken by pub/sub when the leader resigns, else at the leader's
// remaining time. An error wraps ErrNotObtained (and ctx's error when it
// ended the wait).
func (e *Election) Campaign(ctx context.Context, value string) (*Term, error) {
	lease, err := e.m.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return e.begin(ctx, lease, value)
}

// TryCampaign tries once: a term, or an error wrapping ErrNotObtained
// (and ErrTaken when another campaigner leads).
func (e *Election) TryCampaign(ctx context.Context, value string) (*Term, error) {
	lease, err := e.m.TryLock(ctx)
	if err != nil {
		return nil, err
	}
	return e.begin(ctx, lease, value)
}

// begin makes the term of a won lock and publishes its value on a quorum
// (a Proclaim); unless that Proclaim fully succeeded the lock is given back:
// a term whose first value is not on a quorum would read as no leader.
func (e *Election) begin(ctx context.Context, lease *Lease, value string) (*Term, error) {
	t := &Term{Lease: lease, e: e, elected: time.Now()}
	if err := t.Proclaim(ctx, value); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.cfg.releaseTimeout)
		defer cancel()
		_ = lease.Unlock(rctx)
		return nil, errors.Join(ErrNotObtained, err)
	}
	return t, nil
}

// Term is one leader's tenure: the election's lease, with the leader's
// value. Its methods are safe for concurrent use.
//
// Its Token is the term number, a fencing token strictly increasing across
// the leaders of the election: pass it with every write the leader makes
// to a resource that can refuse older tokens. Until is the end of the
// term's validity on the client's monotonic clock, moved on by every
// renewal (the watchdog renews a term every TTL/3).
//
// A term ends by Unlock (the leader resigns: the election is given back on
// every node and a waiting campaigner is woken at once), or is lost: its
// renewal could not reach a quorum before the term's validity ended, or a
// quorum no longer holds it (an operator's ForceUnlock), or the client was
// closed. Done and Context tell the leader to stop; run the leader's work
// under Context. Err and context.Cause of Context say why it ended:
// ErrResigned after Unlock, an error wrapping ErrLeaseLost, or ErrClosed.
// Unlock's errors are a lease's, with ErrResigned for ErrUnlocked: the
// term is over for this leader whatever Unlock returns, and an error
// wrapping ErrNotHeld (fewer than a quorum confirmed the release) needs
// nothing done: nodes that did not release let the term run out at its
// TTL, and no one else can lead before a quorum is free.
//
// For a history of tenures, record Token, Elected and the moment Done
// closes (with Err): at most one term is valid at any moment on the
// client's clock (Until), and tokens strictly increase.
type Term struct {
	*Lease
	e       *Election
	elected time.Time

	mu    sync.Mutex // serialises Proclaim
	value string
	rev   int64
}

// Value is the leader's value, as last proclaimed.
func (t *Term) Value() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.value
}

// Elected is when the campaign was won (after the value was published).
func (t *Term) Elected() time.Time { return t.elected }

// Proclaim changes the leader's value without ending the term, all or
// nothing. It takes two round trips: the value is first sent as pending
// (readers never see it) to every node that holds the term, and committed
// only when a quorum took it. Followers are told of the commit (Observe).
//
//   - nil: a quorum has the value; Value returns it and every read that
//     begins after Proclaim returned sees it (or a later one).
//   - an error wrapping ErrNotPublished (and ErrNotHeld): nothing was
//     published; Value keeps the old value and no reader ever sees the
//     new one. The term itself may still hold: Err says.
//   - an error wrapping ErrPublishUnfinished (rare: nodes failed between
//     the round trips): the value is decided, Value returns it, but fewer
//     than a quorum had it. Readers may see the old value until a reader
//     writes the new one back to a quorum or the next Proclaim (of any
//     value) supersedes it; once one read saw it no later read sees the old.
func (t *Term) Proclaim(ctx context.Context, value string) error {
	if err := t.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rev++
	c := t.e.c
	lockName := t.e.m.names[0]
	owner := t.owner
	// Each round trip has its own attempt's time: the first may spend
	// all of its own waiting for a node that does not answer.
	pctx, cancel := context.WithTimeout(ctx, c.cfg.attemptTimeout)
	prepared, nodeErrs := c.fanCount(nil, func(n *node.Node) (bool, error) {
		return n.Prepare(pctx, lockName, owner, t.Token(), t.rev, value)
	})
	cancel()
	need := c.need()
	if len(prepared) < need {
		t.withdraw(ctx, lockName, owner)
		return &electionError{
			msg:  fmt.Sprintf("quorumlock: election %q: value not published: %d of %d nodes took it, %d needed", t.e.name, len(prepared), len(c.nodes), need),
			errs: append(nodeErrs, ErrNotPublished, withCtxErr(ctx, ErrNotHeld)),
		}
	}
	// Decided: a reader may see the value from here on, so Value must.
	t.value = value
	// Committed where it was prepared: a node that did not answer in time
	// is not waited for twice (a reader writes the value back to it).
	cctx, cancel := context.WithTimeout(ctx, c.cfg.attemptTimeout)
	defer cancel()
	committed, commitErrs := c.fanCount(prepared, func(n *node.Node) (bool, error) {
		return n.Proclaim(cctx, lockName, owner, t.Token(), t.rev, value)
	})
	if len(committed) < need {
		return &electionError{
			msg:  fmt.Sprintf("quorumlock: election %q: value decided but not yet on a quorum: %d of %d nodes committed it, %d needed", t.e.name, len(committed), len(c.nodes), need),
			errs: append(append(commitErrs, nodeErrs...), withCtxErr(ctx, ErrPublishUnfinished)),
		}
	}
	return nil
}

// fanCount calls f on the nodes of index idx (every node when idx is nil)
// at once and returns the indexes of those where it returned true; the
// others' errors name their node (ErrNotHeld where the node answered
// false).
func (c *Client) fanCount(idx []int, f func(n *node.Node) (bool, error)) ([]int, []error) {
	if idx == nil {
		idx = make([]int, len(c.nodes))
		for i := range idx {
			idx[i] = i
		}
	}
	ok := make([]bool, len(idx))
	errs := fanout.All(len(idx), func(j int) error {
		var err error
		ok[j], err = f(c.nodes[idx[j]])
		return err
	})
	var yes []int
	var nodeErrs []error
	for j, i := range idx {
		switch {
		case ok[j]:
			yes = append(yes, i)
		case errs[j] != nil:
			nodeErrs = append(nodeErrs, &NodeError{Node: c.nodes[i].Name(), Err: errs[j]})
		default:
			nodeErrs = append(nodeErrs, &NodeError{Node: c.nodes[i].Name(), Err: ErrNotHeld})
		}
	}
	return yes, nodeErrs
}

// withdraw takes a failed Proclaim's pending value (t.rev) back from the
// nodes, best effort on a fresh bounded context: a pending value is never
// read, so one left behind only waits to be overwritten or to expire.
func (t *Term) withdraw(ctx context.Context, lockName, owner string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.e.c.cfg.releaseTimeout)
	defer cancel()
	t.e.c.fanCount(nil, func(n *node.Node) (bool, error) {
		return n.Withdraw(wctx, lockName, owner, t.Token(), t.rev)
	})
}

// need is how many nodes make a quorum.
func (c *Client) need() int { return len(c.nodes) - c.cfg.policy.FailedLocksLimit(len(c.nodes)) }

// electionError is a one-line summary over per-node errors.
type electionError struct {
	msg  string
	errs []error
}

func (e *electionError) Error() string   { return e.msg }
func (e *electionError) Unwrap() []error { return e.errs }

// LeaderInfo is the current leader as a quorum of nodes sees it. Its zero
// value (Token 0: no term has that number) means no leader, as Observe
// delivers it.
type LeaderInfo struct {
	Token int64  // the leader's term number, its fencing token (Term.Token)
	Value string // its value
	// TimeLeft is how long the term holds on a quorum without renewal, as
	// read (minus the drift allowance); the leader renews every TTL/3.
	TimeLeft time.Duration
	rev      int64
}

// Leader reads the current leader from the nodes. It returns ErrNoLeader
// when a quorum answered and no term holds a quorum of them, and an error
// wrapping ErrLeaderUnknown (with per-node errors) when too few answered to
// tell.
func (e *Election) Leader(ctx context.Context) (LeaderInfo, error) {
	c := e.c
	n := len(c.nodes)
	lockName := e.m.names[0]
	rctx, cancel := context.WithTimeout(ctx, c.cfg.attemptTimeout)
	defer cancel()
	states := make([]node.Leader, n)
	errs := fanout.All(n, func(i int) error {
		var err error
		states[i], err = c.nodes[i].Leader(rctx, lockName)
		return err
	})
	need := c.need()
	answered := 0
	byTerm := map[int64][]node.Leader{}
	var nodeErrs []error
	for i, st := range states {
		if errs[i] != nil {
			nodeErrs = append(nodeErrs, &NodeError{Node: c.nodes[i].Name(), Err: errs[i]})
			continue
		}
		answered++
		if st.Held {
			byTerm[st.Term] = append(byTerm[st.Term], st)
		}
	}
	if answered < need {
		return LeaderInfo{}, &electionError{
			msg:  fmt.Sprintf("quorumlock: election %q: leader unknown: %d of %d nodes answered, %d needed", e.name, answered, n, need),
			errs: append(nodeErrs, withCtxErr(ctx, ErrLeaderUnknown)),
		}
	}
	best, bestN := int64(0), 0
	for term, sts := range byTerm {
		if len(sts) > bestN || (len(sts) == bestN && term > best) {
			best, bestN = term, len(sts)
		}
	}
	if bestN < need {
		if bestN+(n-answered) >= need {
			// The nodes that did not answer could make it a quorum.
			return LeaderInfo{}, &electionError{
				msg:  fmt.Sprintf("quorumlock: election %q: leader unknown: term %d holds %d of %d nodes, %d did not answer", e.name, best, bestN, n, n-answered),
				errs: append(nodeErrs, ErrLeaderUnknown),
			}
		}
		return LeaderInfo{}, ErrNoLeader
	}
	sts := byTerm[best]
	// The term holds a quorum until the need-th longest remaining time
	// runs out.
	info := LeaderInfo{Token: best}
	ttls := make([]time.Duration, 0, len(sts))
	for _, st := range sts {
		if st.Rev > info.rev {
			info.rev, info.Value = st.Rev, st.Value
		}
		ttls = append(ttls, st.TTL)
	}
	if info.rev == 0 {
		// Elected, its first value not yet committed (or withdrawn).
		return LeaderInfo{}, ErrNoLeader
	}
	if err := e.writeBack(ctx, states, errs, info); err != nil {
		return LeaderInfo{}, err
	}
	slices.Sort(ttls)
	slices.Reverse(ttls)
	left := ttls[need-1] - e.m.driftAllowance()
	info.TimeLeft = max(left, 0)
	return info, nil
}

// writeBack makes sure a quorum has the value info read before it is
// returned: a value that reached fewer than a quorum (a Proclaim cut short
// between its round trips) could be missed by a later read of another
// majority, which would then go back to the older value. The nodes that
// answered without info's rev get it (a commit never lowers a rev, so a
// newer Proclaim racing this one is kept); if a quorum still does not have
// it, the read fails rather than return a value it may not stand by, or
// the older value that an earlier read may already have passed.
func (e *Election) writeBack(ctx context.Context, states []node.Leader, errs []error, info LeaderInfo) error {
	c := e.c
	n := len(c.nodes)
	have := 0
	var owner string
	for i, st := range states {
		if errs[i] == nil && st.Held && st.Term == info.Token && st.Rev >= info.rev {
			have++
			owner = st.Owner
		}
	}
	need := c.need()
	if have >= need {
		return nil
	}
	todo := []int{}
	for i, st := range states {
		if errs[i] == nil && !(st.Held && st.Term == info.Token && st.Rev >= info.rev) {
			todo = append(todo, i)
		}
	}
	// Its own attempt's time: the read may have spent its own waiting for
	// nodes that did not answer.
	wctx, cancel := context.WithTimeout(ctx, c.cfg.attemptTimeout)
	defer cancel()
	lockName := e.m.names[0]
	wrote, nodeErrs := c.fanCount(todo, func(nd *node.Node) (bool, error) {
		return nd.Proclaim(wctx, lockName, owner, info.Token, info.rev, info.Value)
	})
	if have += len(wrote); have >= need {
		return nil
	}
	return &electionError{
		msg:  fmt.Sprintf("quorumlock: election %q: leader unknown: term %d's value is on %d of %d nodes after write-back, %d needed", e.name, info.Token, have, n, need),
		errs: append(nodeErrs, withCtxErr(ctx, ErrLeaderUnknown)),
	}
}

// driftAllowance is the clock drift subtracted from a term's time left.
func (m *Mutex) driftAllowance() time.Duration {
	return time.Duration(float64(m.ttl())*m.c.cfg.factor) + 2*time.Millisecond
}

// Observe delivers the election's leadership changes until ctx ends or the
// client is closed; then the channel is closed. Each is the new leader, or
// the zero LeaderInfo when the last delivered term ended and no new term
// holds a quorum yet. The first value is the state at the start.
//
// Changes come in term order: a delivered term is never followed by an
// older one, and a Proclaim within a term is delivered as a new value of
// the same term. Observe reads the leader from a quorum whenever a node
// tells of a new value or a resignation (pub/sub), when the leader's time
// left runs out, after every pub/sub reconnect, and at least every retry
// interval (WithRetryInterval). What "none missed" means: every term that
// is still the leader when the next read happens is delivered; when
// several terms came and went between two reads (a follower cut off from
// the nodes, or one that did not take from the channel), only the latest
// is. The channel holds one change: a slow reader gets the latest state,
// not a backlog.
func (e *Election) Observe(ctx context.Context) <-chan LeaderInfo {
	out := make(chan LeaderInfo)
	stop, ok := e.c.startObserver()
	if !ok {
		close(out)
		return out
	}
	go e.observe(ctx, stop, out)
	return out
}

// leaderChange is what observe last read: a leader, or none after the
// term of Leader.Token (kept to order what follows).
type leaderChange struct {
	Leader   LeaderInfo
	NoLeader bool
}

func (e *Election) observe(ctx context.Context, stop <-chan struct{}, out chan<- LeaderInfo) {
	defer e.c.wg.Done()
	defer close(out)
	signal := make(chan struct{}, 1)
	seq := node.NextWaiter()
	watches := make([]*node.Watch, len(e.c.nodes))
	for i, n := range e.c.nodes {
		watches[i] = n.WatchChannel(seq, e.m.keys[0][i].LeaderChannel(), signal, nil, true)
	}
	defer func() {
		for _, w := range watches {
			w.Stop(false)
		}
	}()
	var (
		last      leaderChange
		delivered bool
	)
	for {
		info, err := e.Leader(ctx)
		next := e.c.jitter(e.c.cfg.retryInterval)
		var ch leaderChange
		send := false
		switch {
		case err == nil:
			if info.TimeLeft < next {
				// Look again when the term would run out unrenewed.
				next = max(info.TimeLeft, 5*time.Millisecond)
			}
			ch = leaderChange{Leader: info}
			switch {
			case !delivered:
				send = true
			case last.NoLeader:
				// Not a stale read of the term that just ended.
				send = info.Token > last.Leader.Token
			default:
				send = info.Token > last.Leader.Token || info.Token == last.Leader.Token && info.rev > last.Leader.rev
			}
		case errors.Is(err, ErrNoLeader):
			ch = leaderChange{Leader: LeaderInfo{Token: last.Leader.Token}, NoLeader: true}
			send = !delivered || !last.NoLeader
		}
		if send {
			select {
			case out <- noTerm(ch):
				last, delivered = ch, true
			case <-ctx.Done():
				return
			case <-stop:
				return
			}
			continue // look again at once: things may have moved on
		}
		t := time.NewTimer(next)
		select {
		case <-signal:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		case <-stop:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// noTerm is the change as the user sees it: no leader is the zero
// LeaderInfo (the term kept internally only orders what follows).
func noTerm(ch leaderChange) LeaderInfo {
	if ch.NoLeader {
		return LeaderInfo{}
	}
	return ch.Leader
}

// observers: the stop signal of Observe's goroutines, closed by Close.
type observerStop struct {
	once sync.Once
	ch   chan struct{}
}

// startObserver counts a new Observe goroutine in the client's tracker and
// returns the channel that Close closes; false when the client is closed.
func (c *Client) startObserver() (<-chan struct{}, bool) {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	if c.closed.Load() {
		return nil, false
	}
	c.obsStop.once.Do(func() { c.obsStop.ch = make(chan struct{}) })
	c.wg.Add(1)
	return c.obsStop.ch, true
}

// stopObservers ends every Observe (Close).
func (c *Client) stopObservers() {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	c.obsStop.once.Do(func() { c.obsStop.ch = make(chan struct{}) })
	close(c.obsStop.ch)
}

// RunLeader campaigns in e with value, runs fn with the term's context
// while this campaigner leads, and campaigns again after the term ends
// (lost, or fn returned nil), until ctx ends. fn must return when its
// context is done; when it returns the term is resigned. A non-nil error
// from fn ends RunLeader with that error (after resigning). RunLeader
// returns ctx's error (joined with ErrNotObtained) once ctx ends, or the
// error of a campaign that cannot go on (ErrClosed).
func RunLeader(ctx context.Context, e *Election, value string, fn func(ctx context.Context, t *Term) error) error {
	for {
		t, err := e.Campaign(ctx, value)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotObtained) {
				return err
			}
			// Elected but the value could not be published (nodes
			// failing): try again after a pause.
			pause := time.NewTimer(e.c.jitter(e.c.cfg.retryInterval))
			select {
			case <-pause.C:
			case <-ctx.Done():
				pause.Stop()
				return withCtxErr(ctx, err)
			}
			continue
		}
		ferr := runTerm(ctx, t, fn)
		_ = t.Unlock(context.WithoutCancel(ctx))
		if ferr != nil && !termOver(ferr) {
			return ferr
		}
		if ctx.Err() != nil {
			return errors.Join(ErrNotObtained, ctx.Err())
		}
	}
}

// termOver reports whether fn's error only says that its context ended
// (the term's or the caller's).
func termOver(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrResigned) || errors.Is(err, ErrClosed)
}

// runTerm runs fn under a context that ends with the term or with ctx,
// whichever ends first (its cause says which).
func runTerm(ctx context.Context, t *Term, fn func(ctx context.Context, t *Term) error) error {
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(t.Context(), func() { cancel(context.Cause(t.Context())) })
	defer stop()
	return fn(fctx, t)
}
