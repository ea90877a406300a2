package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/quorum"
)

// Observer is the optional ability of a Locker to follow who holds it, as
// an election's followers do (quorum.Election.Observe): the channel
// delivers each change's term number (0: no leader) until ctx ends, then
// closes. Run records every delivery as an Observe op of the worker.
type Observer interface {
	Observe(ctx context.Context) <-chan uint64
}

// electionLocker campaigns in one quorum.Election: Lock is Campaign,
// TryLock is TryCampaign, and the Lease is the Term (its number is the
// token, Done its end, Unlock its Resign). The worker's value is its name.
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

func (l electionLocker) Observe(ctx context.Context) <-chan uint64 {
	in := l.e.Observe(ctx)
	out := make(chan uint64)
	go func() {
		defer close(out)
		for ch := range in {
			var term uint64
			if !ch.NoLeader {
				term = uint64(max(ch.Leader.Term, 0))
			}
			select {
			case out <- term:
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
// resource with its term number) while the term holds.
type termLease struct{ t *quorum.Term }

func (l termLease) Unlock(ctx context.Context) error { return l.t.Resign(ctx) }
func (l termLease) Token() int64                     { return l.t.Number() }
func (l termLease) Until() time.Time                 { return l.t.Until() }
func (l termLease) Done() <-chan struct{}            { return l.t.Done() }
