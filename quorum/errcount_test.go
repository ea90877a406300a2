package quorum

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/multilock"
)

// tallyMatches checks that err's summary counts the nodes as their errors
// say: refusals, failures, nodes sitting out and nodes not waited for, and
// never calls a node silent that the decision merely did not wait for.
func tallyMatches(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%v: not an *Error", err)
	}
	msg := err.Error()
	var refused, sitting, failed int
	for _, ne := range e.Nodes() {
		switch {
		case errors.Is(ne.Err, ErrTaken):
			refused++
		case multilock.SitsOut(ne.Err):
			sitting++
		default:
			failed++
		}
	}
	if n := refused + sitting + failed + e.Undecided + e.Granted; n != e.Total {
		t.Errorf("%q: %d refused, %d sitting out, %d failed, %d not waited for, %d granted: %d of %d nodes", msg, refused, sitting, failed, e.Undecided, e.Granted, n, e.Total)
	}
	for _, c := range []struct {
		n    int
		word string
	}{{refused, "held by another owner on "}, {sitting, " sitting out"}, {failed, " failed"}, {e.Undecided, " not waited for"}} {
		if (c.n > 0) != strings.Contains(msg, c.word) {
			t.Errorf("%q: %d nodes, but the summary says %q: %v", msg, c.n, c.word, strings.Contains(msg, c.word))
		}
	}
	if refused > 0 && !strings.Contains(msg, fmt.Sprintf("held by another owner on %d of %d nodes", refused, e.Total)) {
		t.Errorf("%q: %d nodes refused", msg, refused)
	}
	if strings.Contains(msg, "did not answer") {
		t.Errorf("%q calls a node silent", msg)
	}
	return e
}

// On healthy nodes a refused TryLock counts what the nodes said; a node
// the decision did not wait for is not called silent.
func TestErrorCountsRefusals(t *testing.T) {
	_, clients := cluster(t, 3)
	a := newClient(t, clients)
	b := newClient(t, clients)
	ctx := t.Context()
	l, err := mustMutex(t, a, "held").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	for range 5 {
		_, err := mustMutex(t, b, "held").TryLock(ctx)
		if !errors.Is(err, ErrTaken) {
			t.Fatalf("TryLock of a held lock: %v", err)
		}
		tallyMatches(t, err)
	}
}

// Nodes that restart detection keeps out are reported as sitting out,
// with their uptime and countdown, not as failed or silent.
func TestErrorCountsNodesSittingOut(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients, WithRestartDetection(true), WithRestartDelay(time.Hour))
	ctx := t.Context()
	for range 2 { // the first asks the nodes, the second knows they sit out
		_, err := mustMutex(t, c, "young").TryLock(ctx)
		if !errors.Is(err, ErrNodeRestarted) {
			t.Fatalf("TryLock on young nodes: %v", err)
		}
		e := tallyMatches(t, err)
		if !strings.Contains(err.Error(), "sitting out (") || !strings.Contains(err.Error(), "up only ") {
			t.Errorf("%q does not say the nodes sit out, and since when", err)
		}
		for _, ne := range e.Nodes() {
			if !multilock.SitsOut(ne.Err) {
				t.Errorf("%s: %v, want sitting out", ne.Node, ne.Err)
			}
		}
	}
}

// With every node down, the summary counts the failures it saw and the
// node it did not wait for, not a node that did not answer.
func TestErrorCountsDeadNodes(t *testing.T) {
	servers, clients := cluster(t, 3)
	c := newClient(t, clients)
	for _, s := range servers {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := mustMutex(t, c, "dead").TryLock(t.Context())
	if err == nil {
		t.Fatal("TryLock granted with every node down")
	}
	tallyMatches(t, err)
}

// A second Unlock wraps ErrUnlocked.
func TestSecondUnlockWrapsErrUnlocked(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients)
	ctx := t.Context()
	l, err := mustMutex(t, c, "twice").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, ErrUnlocked) || strings.Count(err.Error(), "quorumlock:") != 1 {
		t.Fatalf("second Unlock = %v, want one that wraps ErrUnlocked", err)
	}
}
