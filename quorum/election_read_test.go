package quorum

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// persistentCluster is n redis-server processes with appendfsync always, so
// a killed node comes back from its AOF with the term and its value.
func persistentCluster(t *testing.T, n int, hook func(i int) redis.Hook) ([]*localredis.Server, []redis.UniversalClient) {
	t.Helper()
	servers := localredis.StartNT(t, n, localredis.Config{Persistence: localredis.AOFAlways})
	return servers, testutil.Clients(t, servers, hook)
}

func killAll(t *testing.T, servers ...*localredis.Server) {
	t.Helper()
	for _, s := range servers {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
}

func restartAll(t *testing.T, servers ...*localredis.Server) {
	t.Helper()
	for _, s := range servers {
		if err := s.Restart(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// pauseAll freezes servers (SIGSTOP) and returns their resume; the test's
// end resumes them too.
func pauseAll(t *testing.T, servers ...*localredis.Server) func() {
	t.Helper()
	resume := func() {
		for _, s := range servers {
			if s.Paused() {
				if err := s.Resume(); err != nil {
					t.Error(err)
				}
			}
		}
	}
	for _, s := range servers {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(resume)
	return resume
}

// leadFor10s campaigns in election name with "v1", with a term TTL of
// 10 s (longer than any test here), and resigns when the test ends.
func leadFor10s(t *testing.T, servers []*localredis.Server, clients []redis.UniversalClient, name string) *Term {
	t.Helper()
	e := mustElection(t, newClient(t, clients, WithTTL(10*time.Second)), name)
	// TryCampaign returns once a quorum took the term and its value; a
	// node whose lock landed after the value went by holds the term with
	// no value (rev 0). The tests below count revs per node, so they start
	// from a term whose first value is on every node.
	for try := 0; ; try++ {
		term, err := e.TryCampaign(t.Context(), "v1")
		if err != nil {
			t.Fatal(err)
		}
		revs := committedRevs(t, servers, name)
		if slices.Equal(revs, []int64{1, 1, 1, 1, 1}[:len(servers)]) {
			t.Cleanup(func() { _ = term.Unlock(context.Background()) })
			return term
		}
		if err := term.Unlock(t.Context()); err != nil || try == 4 {
			t.Fatalf("first value's revs %v after %d campaigns (%v)", revs, try+1, err)
		}
	}
}

// wantLeader fails t unless Leader reads term's number and value v.
func wantLeader(t *testing.T, e *Election, term *Term, v, when string) {
	t.Helper()
	info, err := e.Leader(t.Context())
	if err != nil || info.Token != term.Token() || info.Value != v {
		t.Fatalf("%s: Leader = %+v, %v; want term %d value %q", when, info, err, term.Token(), v)
	}
}

// committedRevs reads each running node's committed rev of the election
// (node.Leader, as Leader reads it; -1 for a node that does not hold it).
func committedRevs(t *testing.T, servers []*localredis.Server, name string) []int64 {
	t.Helper()
	out := make([]int64, len(servers))
	for i, s := range servers {
		n, err := node.New(s.Client())
		if err != nil {
			t.Fatal(err)
		}
		st, err := n.Leader(t.Context(), ElectionPrefix+name)
		_ = n.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = -1
		if st.Held {
			out[i] = st.Rev
		}
	}
	return out
}

// A Proclaim that reached only a minority is nothing: it fails with
// ErrNotPublished, the leader keeps its value, and no read ever returns the
// new one, whichever majority answers, across kills, restarts from the AOF
// and freezes. (Reads once took the highest value any node held: "v2" with
// nodes 3-4 answering, "v1" with them frozen.)
func TestElectionFailedProclaimIsNeverRead(t *testing.T) {
	servers, clients := persistentCluster(t, 5, nil)
	ctx := t.Context()
	term := leadFor10s(t, servers, clients, "flip")

	killAll(t, servers[:3]...)
	err := term.Proclaim(ctx, "v2")
	if !errors.Is(err, ErrNotPublished) || !errors.Is(err, ErrNotHeld) || errors.Is(err, ErrPublishUnfinished) {
		t.Fatalf("Proclaim with 2 of 5 nodes: %v, want ErrNotPublished", err)
	}
	if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "2 of 5") {
		t.Errorf("Proclaim's error %q: want one line that counts the nodes", err)
	}
	if term.Value() != "v1" {
		t.Fatalf("Value %q after a failed Proclaim, want v1", term.Value())
	}
	restartAll(t, servers[:3]...)

	reader := mustElection(t, newClient(t, clients), "flip")
	wantLeader(t, reader, term, "v1", "after the restart")
	if term.Value() != "v1" {
		t.Fatalf("leader's Value %q", term.Value())
	}
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	select {
	case ch := <-reader.Observe(octx):
		if ch.Token != term.Token() || ch.Value != "v1" {
			t.Fatalf("Observe's first change %+v, want term %d value v1", ch, term.Token())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Observe delivered nothing")
	}
	resume := pauseAll(t, servers[3:]...)
	wantLeader(t, reader, term, "v1", "nodes 3-4 frozen")
	resume()
	wantLeader(t, reader, term, "v1", "nodes 3-4 resumed")
	if err := term.Err(); err != nil {
		t.Fatalf("the term ended during the test: %v", err)
	}
}

// A Proclaim that succeeded with two of five nodes down is read back from
// a majority with those two: the one node of it that has the new value
// writes it back (not the first node's older value), so every node holds
// it, and no read goes back to the old value.
func TestElectionReadWritesBack(t *testing.T) {
	servers, clients := persistentCluster(t, 5, nil)
	ctx := t.Context()
	term := leadFor10s(t, servers, clients, "wb")
	laggards := []*localredis.Server{servers[0], servers[4]}
	killAll(t, laggards...)
	if err := term.Proclaim(ctx, "v2"); err != nil {
		t.Fatalf("Proclaim with 3 of 5 nodes: %v", err)
	}
	restartAll(t, laggards...)
	if got := committedRevs(t, servers, "wb"); got[0] != 1 || got[4] != 1 {
		t.Fatalf("committed revs %v: nodes 0 and 4 should still hold the first value", got)
	}

	reader := mustElection(t, newClient(t, clients), "wb")
	// The read majority is nodes 0, 3 and 4: the new value on one of them.
	resume := pauseAll(t, servers[1:3]...)
	wantLeader(t, reader, term, "v2", "nodes 1-2 frozen")
	resume()
	if got := committedRevs(t, servers, "wb"); got[0] != 2 || got[3] != 2 || got[4] != 2 {
		t.Fatalf("committed revs %v after the read: want rev 2 written back to nodes 0 and 4", got)
	}
	resume = pauseAll(t, servers[:3]...)
	// Two nodes answer: too few to tell, never the old value.
	if info, err := reader.Leader(ctx); !errors.Is(err, ErrLeaderUnknown) {
		t.Fatalf("Leader from 2 of 5 nodes: %+v, %v; want ErrLeaderUnknown", info, err)
	}
	resume()
	wantLeader(t, reader, term, "v2", "all nodes back")
}

// commitHook fails the election's commits (Proclaim's phase two and a
// reader's write-back: the script whose last argument is the leader
// channel) on its node while on is set.
func commitHook(on *atomic.Bool) redis.Hook {
	errInjected := errors.New("injected: commit lost")
	return failHook(func(cmd redis.Cmder) error {
		args := cmd.Args()
		if on.Load() && len(args) > 0 {
			if last, ok := args[len(args)-1].(string); ok && strings.HasSuffix(last, ":elected") {
				return errInjected
			}
		}
		return nil
	})
}

// failHook is a go-redis hook that fails a command (without sending it)
// when f returns an error.
type failHook func(cmd redis.Cmder) error

func (f failHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f failHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := f(cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (f failHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A Proclaim whose commit reached only a minority (nodes failed between its
// two round trips) is decided: the leader's Value is the new value and the
// error says so. Readers see the old value or the new one; once one read
// returned the new one (writing it back), no read returns the old one,
// whichever majority answers. The next Proclaim completes normally.
func TestElectionUnfinishedProclaim(t *testing.T) {
	var lose [5]atomic.Bool
	servers, clients := persistentCluster(t, 5, func(i int) redis.Hook { return commitHook(&lose[i]) })
	readerClients := testutil.Clients(t, servers, nil)
	ctx := t.Context()
	term := leadFor10s(t, servers, clients, "half")
	for i := 2; i < 5; i++ {
		lose[i].Store(true)
	}
	err := term.Proclaim(ctx, "v2")
	for i := range lose {
		lose[i].Store(false)
	}
	if !errors.Is(err, ErrPublishUnfinished) || errors.Is(err, ErrNotPublished) {
		t.Fatalf("Proclaim committed on 2 of 5: %v, want ErrPublishUnfinished", err)
	}
	if term.Value() != "v2" {
		t.Fatalf("Value %q, want the decided v2", term.Value())
	}
	if got := committedRevs(t, servers, "half"); got[0] != 2 || got[1] != 2 || got[2] != 1 || got[3] != 1 || got[4] != 1 {
		t.Fatalf("committed revs %v, want v2 on nodes 0-1 only", got)
	}
	reader := mustElection(t, newClient(t, readerClients), "half")
	resume := pauseAll(t, servers[0]) // nodes 1-4 answer: v2 on one of them
	wantLeader(t, reader, term, "v2", "node 0 frozen")
	resume()
	resume = pauseAll(t, servers[:2]...) // nodes 2-4 answer: none had v2 before the read
	wantLeader(t, reader, term, "v2", "nodes 0-1 frozen")
	resume()
	if err := term.Proclaim(ctx, "v3"); err != nil {
		t.Fatal(err)
	}
	wantLeader(t, reader, term, "v3", "after the next Proclaim")
}

// A term's Unlock outcomes: a second Unlock wraps ErrResigned (a second
// Unlock of a plain lease ErrUnlocked); an Unlock that no quorum confirmed wraps ErrNotHeld,
// and the term is over for its leader all the same.
func TestElectionResignErrors(t *testing.T) {
	servers, clients := cluster(t, 3)
	ctx := t.Context()
	c := newClient(t, clients)
	e := mustElection(t, c, "resign")
	term, err := e.TryCampaign(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := term.Unlock(ctx); !errors.Is(err, ErrResigned) {
		t.Errorf("second Unlock: %v, want ErrResigned", err)
	}
	lease, err := mustMutex(t, c, "twice").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lease.Unlock(ctx); !errors.Is(err, ErrUnlocked) {
		t.Errorf("second Unlock: %v, want ErrUnlocked", err)
	}

	term, err = e.TryCampaign(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	killAll(t, servers[1:]...)
	err = term.Unlock(ctx)
	if !errors.Is(err, ErrNotHeld) || errors.Is(err, ErrResigned) {
		t.Errorf("Unlock with 1 of 3 nodes: %v, want ErrNotHeld", err)
	}
	if !errors.Is(term.Err(), ErrResigned) {
		t.Errorf("after an unconfirmed Unlock: Err %v, want ErrResigned", term.Err())
	}
}
