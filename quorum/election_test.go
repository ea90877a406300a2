package quorum

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustElection(t *testing.T, c *Client, name string, opts ...Option) *Election {
	t.Helper()
	e, err := c.Election(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Several campaigners on separate clients: one leads at a time, each
// term's number is higher than the one before, and Leader reads the
// current one.
func TestElectionOneLeaderAtATimeTermsIncrease(t *testing.T) {
	_, clients := cluster(t, 3)
	ctx := t.Context()
	var (
		mu      sync.Mutex
		leading int
		terms   []int64
		wg      sync.WaitGroup
	)
	const campaigners, rounds = 4, 3
	errs := make(chan error, campaigners*rounds)
	for i := range campaigners {
		c := newClient(t, clients)
		e := mustElection(t, c, "jobs")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				term, err := e.Campaign(ctx, fmt.Sprint("c", i))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				leading++
				if leading != 1 {
					errs <- fmt.Errorf("%d leaders at once", leading)
				}
				terms = append(terms, term.Token())
				mu.Unlock()
				info, err := e.Leader(ctx)
				if err != nil || info.Token != term.Token() || info.Value != fmt.Sprint("c", i) {
					errs <- fmt.Errorf("Leader = %+v, %v; want term %d value c%d", info, err, term.Token(), i)
				}
				time.Sleep(2 * time.Millisecond) // the leader's work: terms must not overlap across it
				mu.Lock()
				leading--
				mu.Unlock()
				if err := term.Unlock(ctx); err != nil {
					errs <- err
				}
				if !errors.Is(term.Err(), ErrResigned) || !errors.Is(context.Cause(term.Context()), ErrResigned) {
					errs <- fmt.Errorf("after Unlock: Err %v, cause %v", term.Err(), context.Cause(term.Context()))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(terms) != campaigners*rounds {
		t.Fatalf("%d terms, want %d", len(terms), campaigners*rounds)
	}
	for i := 1; i < len(terms); i++ {
		if terms[i] <= terms[i-1] {
			t.Errorf("term %d after %d: terms %v", terms[i], terms[i-1], terms)
		}
	}
}

// The term is a fencing token even on a client without fencing, and a
// second campaigner's TryCampaign is refused while one leads.
func TestElectionFencedWithoutClientFencing(t *testing.T) {
	_, clients := cluster(t, 3)
	ctx := t.Context()
	a := mustElection(t, newClient(t, clients), "x")
	b := mustElection(t, newClient(t, clients), "x")
	ta, err := a.TryCampaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if ta.Token() <= 0 {
		t.Errorf("term %d, want a positive fencing token", ta.Token())
	}
	if _, err := b.TryCampaign(ctx, "b"); !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrTaken) {
		t.Errorf("second TryCampaign: %v, want ErrNotObtained and ErrTaken", err)
	}
	if err := ta.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	tb, err := b.TryCampaign(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if tb.Token() <= ta.Token() {
		t.Errorf("term %d after %d", tb.Token(), ta.Token())
	}
	_ = tb.Unlock(ctx)
}

// A campaigner waiting behind a leader is woken by the leader's Unlock
// through pub/sub: with a retry interval and term TTL of a minute, nothing
// else could wake it before the test's deadline.
func TestElectionResignWakesCampaigner(t *testing.T) {
	_, clients := cluster(t, 3)
	ctx := t.Context()
	slow := []Option{WithRetryInterval(time.Minute), WithTTL(time.Minute)}
	a := mustElection(t, newClient(t, clients, slow...), "wake")
	counted, tries := attempts()
	b := mustElection(t, newClient(t, clients, append(slow, counted)...), "wake")
	ta, err := a.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Term, 1)
	go func() {
		tb, err := b.Campaign(ctx, "b")
		if err != nil {
			t.Error(err)
		}
		got <- tb
	}()
	waitAttempts(t, tries, 2) // b's first try and its look after subscribing
	if err := ta.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case tb := <-got:
		if tb == nil {
			return
		}
		if tb.Token() <= ta.Token() || tb.Value() != "b" {
			t.Errorf("b's term %d value %q; a's term %d", tb.Token(), tb.Value(), ta.Token())
		}
		_ = tb.Unlock(ctx)
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting campaigner was not woken by Unlock")
	}
}

// A leader whose nodes go away loses its term: Done closes and Err wraps
// ErrLeaseLost. Leader then cannot tell (ErrLeaderUnknown).
func TestElectionLeaderLosesNodes(t *testing.T) {
	servers, clients := cluster(t, 3)
	ctx := t.Context()
	c := newClient(t, clients, WithTTL(600*time.Millisecond))
	e := mustElection(t, c, "lose")
	term, err := e.Campaign(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers[:2] {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-term.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the term outlived a quorum of its nodes")
	}
	if !errors.Is(term.Err(), ErrLeaseLost) || !errors.Is(context.Cause(term.Context()), ErrLeaseLost) {
		t.Errorf("Err %v, cause %v; want ErrLeaseLost", term.Err(), context.Cause(term.Context()))
	}
	if _, err := e.Leader(ctx); !errors.Is(err, ErrLeaderUnknown) || strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("Leader with 1 of 3 nodes: %q, want one line wrapping ErrLeaderUnknown", err)
	}
	var ne *NodeError
	if _, err := e.Leader(ctx); !errors.As(err, &ne) {
		t.Errorf("Leader's error %v has no *NodeError", err)
	}
	_ = term.Unlock(ctx)
}

// Observe delivers the state at the start, each new term, a Proclaim's new
// value, and the end of a term, in order; Leader agrees. After Unlock and
// Close nothing but the fencing counter is left on the nodes.
func TestElectionObserveAndLeader(t *testing.T) {
	servers, clients := cluster(t, 3)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := newClient(t, clients)
	e := mustElection(t, c, "obs")
	if _, err := e.Leader(ctx); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("Leader before any campaign: %v, want ErrNoLeader", err)
	}
	ch := e.Observe(ctx)
	next := func(what string) LeaderInfo {
		t.Helper()
		select {
		case x, ok := <-ch:
			if !ok {
				t.Fatalf("%s: channel closed", what)
			}
			return x
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: nothing delivered", what)
		}
		return LeaderInfo{}
	}
	if x := next("start"); x != (LeaderInfo{}) {
		t.Fatalf("first change %+v, want the zero LeaderInfo (no leader)", x)
	}
	term, err := e.Campaign(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if x := next("elected"); x == (LeaderInfo{}) || x.Token != term.Token() || x.Value != "v1" || x.TimeLeft <= 0 {
		t.Fatalf("after Campaign: %+v, want term %d value v1", x, term.Token())
	}
	if err := term.Proclaim(ctx, "v2"); err != nil {
		t.Fatal(err)
	}
	if term.Value() != "v2" {
		t.Errorf("Value %q after Proclaim", term.Value())
	}
	if x := next("proclaimed"); x.Token != term.Token() || x.Value != "v2" {
		t.Fatalf("after Proclaim: %+v", x)
	}
	if info, err := e.Leader(ctx); err != nil || info.Value != "v2" || info.Token != term.Token() {
		t.Errorf("Leader = %+v, %v", info, err)
	}
	if err := term.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if x := next("resigned"); x != (LeaderInfo{}) {
		t.Fatalf("after Unlock: %+v, want the zero LeaderInfo (no leader)", x)
	}
	oc := newClient(t, clients)
	other := mustElection(t, oc, "obs")
	t2, err := other.Campaign(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	if x := next("second"); x.Token != t2.Token() || t2.Token() <= term.Token() || x.Value != "w" {
		t.Fatalf("second term: %+v (term %d after %d)", x, t2.Token(), term.Token())
	}
	if err := t2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Unlock returns once a quorum released; oc's Close waits for the
	// rest (its last node's release may still be on the way).
	if err := oc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Close ends Observe.
	for range ch {
	}
	for i, s := range servers {
		rc := s.Client()
		keys, err := rc.Keys(ctx, "quorumlock:{election:obs}*").Result()
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if !strings.HasSuffix(k, ":fence") {
				t.Errorf("node %d: %s left behind", i, k)
			}
		}
	}
}

// RunLeader campaigns again after a term ends: here fn returns at once the
// first time (the term is resigned), and the second term is taken away by
// a force-unlock, which ends fn's context; the third run cancels ctx.
func TestRunLeaderCampaignsAgain(t *testing.T) {
	_, clients := cluster(t, 3)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := newClient(t, clients)
	e := mustElection(t, c, "run")
	var terms []int64
	var causes []error
	err := RunLeader(ctx, e, "me", func(tctx context.Context, term *Term) error {
		terms = append(terms, term.Token())
		switch len(terms) {
		case 1:
			return nil
		case 2:
			if _, err := c.Admin().ForceUnlock(ctx, ElectionPrefix+"run", "test"); err != nil {
				return err
			}
			select {
			case <-tctx.Done():
				causes = append(causes, context.Cause(tctx))
			case <-time.After(20 * time.Second):
				return errors.New("the forced term's context did not end")
			}
			return tctx.Err()
		default:
			cancel()
			<-tctx.Done()
			return nil
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("RunLeader: %v, want context.Canceled", err)
	}
	if len(terms) != 3 || terms[0] >= terms[1] || terms[1] >= terms[2] {
		t.Errorf("terms %v, want 3 increasing", terms)
	}
	if len(causes) != 1 || !errors.Is(causes[0], ErrLeaseLost) {
		t.Errorf("forced term's cause %v, want ErrLeaseLost", causes)
	}
}

// A fn error ends RunLeader with it; bad options are refused by name.
func TestRunLeaderErrorAndOptions(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients)
	e := mustElection(t, c, "err")
	boom := errors.New("boom")
	if err := RunLeader(t.Context(), e, "v", func(context.Context, *Term) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("RunLeader: %v, want boom", err)
	}
	if _, err := e.Leader(t.Context()); !errors.Is(err, ErrNoLeader) {
		t.Errorf("after RunLeader returned: %v, want ErrNoLeader", err)
	}
	if _, err := c.Election("x", WithTTL(-time.Second)); err == nil || !strings.Contains(err.Error(), "WithTTL") {
		t.Errorf("negative TTL: %v", err)
	}
	if _, err := c.Election(""); err == nil {
		t.Error("empty name accepted")
	}
}

// The leader's value lives as long as the term: renewals keep it (the
// extend script re-arms it with the lock), well past the first TTL.
func TestElectionValueOutlivesTTLWhileRenewed(t *testing.T) {
	_, clients := cluster(t, 3)
	ctx := t.Context()
	e := mustElection(t, newClient(t, clients, WithTTL(300*time.Millisecond)), "renewed")
	term, err := e.Campaign(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond) // four TTLs
	if err := term.Err(); err != nil {
		t.Skipf("the term was lost on a loaded machine: %v", err)
	}
	info, err := e.Leader(ctx)
	if err != nil || info.Token != term.Token() || info.Value != "v" {
		t.Errorf("Leader after four TTLs: %+v, %v", info, err)
	}
	if err := term.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
