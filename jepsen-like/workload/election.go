package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/quorum"
)

// Observation is one delivery of an Observer: the term (0: no leader)
// and its value, and From, the earliest instant the read behind the
// delivery may have begun.
type Observation struct {
	Term  uint64
	Value string
	From  time.Time
}

// Observer is the optional ability of a Locker to follow who holds it, as
// an election's followers do (quorum.Election.Observe): the channel
// delivers each change until ctx ends, then closes. Run records every
// delivery as an Observe op of the worker.
type Observer interface {
	Observe(ctx context.Context) <-chan Observation
}

// LeaderReader is the optional ability of a Locker to read who holds it,
// as an election's followers do (quorum.Election.Leader): the term (0: no
// leader) and its value. Run has every such worker read it every
// Config.LeaderReads, recording each read as a LeaderRead op.
type LeaderReader interface {
	Leader(ctx context.Context) (term uint64, value string, err error)
}

// Proclaimer is the optional ability of a Lease to change the value its
// holder publishes (quorum.Term.Proclaim); Value is the value published
// last (at first the campaign's). A holder proclaims a new value every
// Config.Proclaims while it holds, recording each as a Proclaim op.
type Proclaimer interface {
	Proclaim(ctx context.Context, value string) error
	Value() string
}

// ProclaimOutcome is how the history records a Proclaim that returned
// err: Ok when it returned nil, Fail when the error says the value was
// certainly not published (no reader may ever see it), Unknown when it
// may have reached some nodes and show later.
func ProclaimOutcome(err error) history.Outcome {
	if err == nil {
		return history.Ok
	}
	// ErrNotPublished: the value was withdrawn before any node committed
	// it, so no reader may ever see it. Anything else (ErrPublishUnfinished,
	// a timeout) may still show later.
	if errors.Is(err, quorum.ErrNotPublished) {
		return history.Fail
	}
	return history.Unknown
}

// ProclaimValue is the k-th value worker proclaims in term: distinct
// across the run, so a read names the one Proclaim that wrote it.
func ProclaimValue(worker int, term int64, k int) string {
	return fmt.Sprintf("worker-%d-%d-%d", worker, term, k)
}

// electionLocker campaigns in one quorum.Election: Lock is Campaign,
// TryLock is TryCampaign, and the Lease is the Term (its number is the
// token, Done its end, Unlock resigns it). The worker's value is its name.
type electionLocker struct {
	e     *quorum.Election
	value string
}

func newElection(qc *quorum.Client, name string, worker int) (Locker, error) {
	e, err := qc.Election(name)
	if err != nil {
		return nil, err
	}
	return electionLocker{e: e, value: fmt.Sprintf("worker-%d", worker)}, nil
}

func (l electionLocker) TryLock(ctx context.Context) (Lease, error) {
	return wrapTerm(l.e.TryCampaign(ctx, l.value))
}

func (l electionLocker) Lock(ctx context.Context) (Lease, error) {
	return wrapTerm(l.e.Campaign(ctx, l.value))
}

func (electionLocker) Hold() Hold { return Hold{Role: checker.RoleLeader} }

func (l electionLocker) Leader(ctx context.Context) (uint64, string, error) {
	info, err := l.e.Leader(ctx)
	switch {
	case errors.Is(err, quorum.ErrNoLeader):
		return 0, "", nil
	case err != nil:
		return 0, "", err
	}
	return uint64(max(info.Token, 0)), info.Value, nil
}

// Observe stamps, before each receive, when it began to wait: Observe
// reads the nodes only once it handed over the delivery before (the
// channel's buffer lets it run that many deliveries further ahead), so
// the read behind a delivery began after the wait for the delivery
// 1 + cap(channel) before it began (or after the call, for the first).
func (l electionLocker) Observe(ctx context.Context) <-chan Observation {
	start := time.Now()
	in := l.e.Observe(ctx)
	lag := 1 + cap(in)
	out := make(chan Observation)
	go func() {
		defer close(out)
		var ready []time.Time // the last lag+1 waits' starts
		n := 0
		for {
			ready = append(ready, time.Now())
			if len(ready) > lag+1 {
				ready = ready[1:]
			}
			ch, ok := <-in
			if !ok {
				return
			}
			n++
			o := Observation{From: start}
			if n > lag {
				o.From = ready[0]
			}
			if ch != (quorum.LeaderInfo{}) {
				o.Term, o.Value = uint64(max(ch.Token, 0)), ch.Value
			}
			select {
			case out <- o:
			case <-ctx.Done():
				for range in { // let Observe see ctx and close
				}
				return
			}
		}
	}()
	return out
}

func wrapTerm(t *quorum.Term, err error) (Lease, error) {
	if err != nil {
		_, err = wrap(nil, err)
		return nil, err
	}
	return termLease{t}, nil
}

// termLease is a Term as the workload's Lease: the leader acts (writes the
// resource with its term number, proclaims new values) while the term
// holds.
type termLease struct{ t *quorum.Term }

func (l termLease) Unlock(ctx context.Context) error { return l.t.Unlock(ctx) }
func (l termLease) Token() int64                     { return l.t.Token() }
func (l termLease) Until() time.Time                 { return l.t.Until() }
func (l termLease) Done() <-chan struct{}            { return l.t.Done() }
func (l termLease) Value() string                    { return l.t.Value() }

func (l termLease) Proclaim(ctx context.Context, value string) error {
	return l.t.Proclaim(ctx, value)
}
