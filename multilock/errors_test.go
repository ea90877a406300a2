package multilock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/drift"
	"github.com/quorumlock/quorumlock/internal/testutil"
)

// Every kind of failure over fake nodes reads as one line, summary first,
// with the nodes' errors behind it, the most telling first.
func TestErrorFormats(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		setup    func(ns []*fakeNode)
		op       func(t *testing.T, ns []*fakeNode) error
		is       []error
		contains string
		first    error // what errors.As(&NodeError) finds first; nil: no node error
	}{
		{
			name:  "refused",
			setup: func(ns []*fakeNode) { ns[0].holder, ns[1].holder, ns[2].holder = "other", "other", "other" },
			is:    []error{ErrNotObtained, ErrTaken}, contains: "lock not obtained: held by another owner on ", first: ErrTaken,
		},
		{
			name:  "unreachable",
			setup: func(ns []*fakeNode) { ns[0].down, ns[1].down, ns[2].down = true, true, true },
			is:    []error{ErrNotObtained, errDown}, contains: "lock not obtained: ", first: errDown,
		},
		{
			name:  "mixed: a failure before a refusal",
			setup: func(ns []*fakeNode) { ns[0].holder, ns[1].down = "other", true },
			is:    []error{ErrNotObtained, ErrTaken, errDown}, contains: "held by another owner on 1 of 3 nodes, 1 failed (fake-1: connection refused)", first: errDown,
		},
		{
			name:  "mixed: a refusal before a timeout",
			setup: func(ns []*fakeNode) { ns[0].holder, ns[1].hang = "other", true },
			op: func(t *testing.T, ns []*fakeNode) error {
				m, _ := New(lockers(ns, "me"))
				ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				ns[2].set(func(n *fakeNode) { n.hang = true })
				_, _, _, err := m.Acquire(ctx, time.Second)
				return err
			},
			// The first call cut off by its per-node deadline decides; the
			// other is undecided, unless its answer came before the
			// error was put together.
			is: []error{ErrNotObtained, ErrTaken, context.DeadlineExceeded}, contains: "held by another owner on 1 of 3 nodes, ", first: ErrTaken,
		},
		{
			name: "too slow",
			op: func(t *testing.T, ns []*fakeNode) error {
				clk := drift.NewFake(time.Unix(1000, 0))
				// Every node answers late: with only one, the other two can
				// decide the quorum before it answers.
				for _, n := range ns {
					n.set(func(n *fakeNode) { n.clock, n.advance = clk, 2*time.Second })
				}
				m, _ := New(lockers(ns, "me"), WithClock(clk))
				_, _, _, err := m.Acquire(ctx, time.Second)
				return err
			},
			is: []error{ErrNotObtained, ErrTooSlow}, contains: "lock not obtained: acquisition outlasted",
		},
		{
			name: "extend not held",
			op: func(t *testing.T, ns []*fakeNode) error {
				m, _ := New(lockers(ns, "me"))
				if ok, _, _, err := m.Acquire(ctx, time.Second); !ok {
					t.Fatal(err)
				}
				for _, n := range ns {
					n.set(func(n *fakeNode) { n.holder = "other" })
				}
				_, err := m.Extend(ctx, time.Second)
				return err
			},
			is: []error{ErrNotHeld, ErrLost}, contains: "lock not extended: no longer held on ", first: ErrNotHeld,
		},
		{
			name: "release not held",
			op: func(t *testing.T, ns []*fakeNode) error {
				m, _ := New(lockers(ns, "me"))
				if ok, _, _, err := m.Acquire(ctx, time.Second); !ok {
					t.Fatal(err)
				}
				// Acquire returns on a quorum; wait until the last node's
				// grant landed too, or it could land after the change below.
				waitHeld(t, ns, "me")
				ns[0].set(func(n *fakeNode) { n.holder = "" })
				ns[1].set(func(n *fakeNode) { n.down = true })
				_, err := m.Release(ctx)
				return err
			},
			is: []error{ErrNotHeld, errDown}, contains: "lock not released on a quorum: no longer held on 1 of 3 nodes, 1 failed (fake-1: connection refused)", first: errDown,
		},
		{
			name: "nested",
			op: func(t *testing.T, ns []*fakeNode) error {
				a, _ := New(lockers(ns, "me"))
				other := fakeNodes(3)
				for _, n := range other {
					n.holder = "other"
				}
				b, _ := New(lockers(other, "me"))
				m, _ := New([]Locker{a, b}, WithPolicy(All))
				_, _, _, err := m.Acquire(ctx, time.Second)
				return err
			},
			is: []error{ErrNotObtained, ErrTaken}, contains: "lock not obtained: multilock[fake-0 fake-1 fake-2]: held by another owner on ", first: ErrTaken,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := fakeNodes(3)
			if tc.setup != nil {
				tc.setup(ns)
			}
			op := tc.op
			if op == nil {
				op = func(t *testing.T, ns []*fakeNode) error {
					m, _ := New(lockers(ns, "me"))
					_, _, _, err := m.Acquire(ctx, time.Second)
					return err
				}
			}
			err := op(t, ns)
			if err == nil {
				t.Fatal("no error")
			}
			testutil.CheckOneLine(t, err)
			for _, want := range tc.is {
				if !errors.Is(err, want) {
					t.Errorf("errors.Is(err, %v) = false: %v", want, err)
				}
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not say %q", err, tc.contains)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("no *Error in %v", err)
			}
			var ne *NodeError
			if got := errors.As(err, &ne); got != (tc.first != nil) {
				t.Fatalf("errors.As(*NodeError) = %v, want %v", got, tc.first != nil)
			}
			if tc.first == nil {
				return
			}
			if !errors.Is(ne, tc.first) {
				t.Errorf("first node error %v, want one wrapping %v", ne, tc.first)
			}
			if nodes := e.Nodes(); len(nodes) == 0 || nodes[0] != ne {
				t.Errorf("Nodes()[0] is not errors.As's: %v", nodes)
			}
			long := fmt.Sprintf("%+v", err)
			if got := strings.Count(long, "\n"); got != len(e.Nodes()) {
				t.Errorf("%%+v has %d lines of detail, want one per node error (%d): %s", got, len(e.Nodes()), long)
			}
			if fmt.Sprint(err) != err.Error() {
				t.Errorf("%%v differs from Error(): %v", err)
			}
		})
	}
}

// A node that had not answered when the outcome was already decided is
// counted as undecided, not reported as an error.
func TestUndecidedIsNoError(t *testing.T) {
	ns := fakeNodes(3)
	ns[0].holder, ns[1].holder, ns[2].hang = "other", "other", true
	m, _ := New(lockers(ns, "me"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, _, err := m.Acquire(ctx, time.Second)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Acquire: %v", err)
	}
	for _, ne := range e.Nodes() {
		if ne.Node == "fake-2" {
			t.Errorf("the undecided node is reported as an error: %v", ne)
		}
	}
	if e.Undecided != 1 || errors.Is(err, ErrNoAnswer) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Undecided = %d, err %v", e.Undecided, err)
	}
	if want := "held by another owner on 2 of 3 nodes, 1 not waited for"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("%q does not end with %q", err, want)
	}
}

// sittingOut is a node's error of a safety gate: it answered, but does
// not vote for now.
type sittingOut struct{}

func (sittingOut) Error() string { return "up only 2s: no vote for 8s more" }
func (sittingOut) SitsOut() bool { return true }

// The summary counts the nodes by what they said: a refusal, a failure, a
// node sitting out, a node not waited for; never one for another.
func TestTallyCountsWhatNodesSaid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(ns []*fakeNode)
		want  string
		// not: words the summary must not have
		not []string
	}{
		{
			name:  "a node not waited for is not silent",
			setup: func(ns []*fakeNode) { ns[0].holder, ns[1].holder, ns[2].hang = "other", "other", true },
			want:  `lock not obtained: held by another owner on 2 of 3 nodes, 1 not waited for`,
		},
		{
			name:  "a node sitting out is neither failed nor silent",
			setup: func(ns []*fakeNode) { ns[0].holder, ns[1].fail, ns[2].hang = "other", sittingOut{}, true },
			want:  `lock not obtained: held by another owner on 1 of 3 nodes, 1 sitting out (fake-1: up only 2s: no vote for 8s more), 1 not waited for`,
		},
		{
			name:  "all sitting out",
			setup: func(ns []*fakeNode) { ns[0].fail, ns[1].fail, ns[2].hang = sittingOut{}, sittingOut{}, true },
			want:  `lock not obtained: 2 of 3 nodes sitting out (fake-0: up only 2s: no vote for 8s more; fake-1: up only 2s: no vote for 8s more), 1 not waited for`,
		},
		{
			name:  "a failure, a node sitting out",
			setup: func(ns []*fakeNode) { ns[0].down, ns[1].fail, ns[2].hang = true, sittingOut{}, true },
			want:  `lock not obtained: 1 of 3 nodes failed (fake-0: connection refused), 1 sitting out (fake-1: up only 2s: no vote for 8s more), 1 not waited for`,
		},
		{
			name:  "every node refuses and answers",
			setup: func(ns []*fakeNode) { ns[0].holder, ns[1].holder, ns[2].holder = "other", "other", "other" },
			// Two refusals decide; the third is counted as a refusal only
			// when its answer came before the error was made.
			not: []string{"did not answer", "failed", "timed out"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := fakeNodes(3)
			tc.setup(ns)
			m, _ := New(lockers(ns, "me"))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _, _, err := m.Acquire(ctx, time.Second)
			if err == nil {
				t.Fatal("granted")
			}
			got := err.Error()
			if tc.want != "" && got != "quorumlock: "+tc.want {
				t.Errorf("got  %q\nwant %q", got, "quorumlock: "+tc.want)
			}
			for _, w := range append(tc.not, "did not answer", "2 of 3 nodes failed") {
				if strings.Contains(got, w) {
					t.Errorf("%q says %q", got, w)
				}
			}
			var e *Error
			if errors.As(err, &e) {
				refused, sitting := 0, 0
				for _, ne := range e.Nodes() {
					switch {
					case errors.Is(ne.Err, ErrTaken):
						refused++
					case SitsOut(ne.Err):
						sitting++
					}
				}
				if n := refused + sitting + e.Undecided + e.Granted; n > e.Total {
					t.Errorf("%d nodes counted of %d", n, e.Total)
				}
			}
		})
	}
}

// Every option's error names the option.
func TestOptionErrorsNameTheOption(t *testing.T) {
	ls := lockers(fakeNodes(3), "me")
	for _, tc := range []struct {
		opt  Option
		name string
	}{
		{WithPolicy(nil), "WithPolicy"},
		{WithPolicy(badPolicy{}), "WithPolicy"},
		{WithClock(nil), "WithClock"},
		{WithDriftFactor(1), "WithDriftFactor"},
		{WithDriftFactor(-0.1), "WithDriftFactor"},
		{WithReleaseTimeout(0), "WithReleaseTimeout"},
	} {
		_, err := New(ls, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: New = %v, want an error naming it", tc.name, err)
			continue
		}
		testutil.CheckOneLine(t, err)
	}
}

type badPolicy struct{}

func (badPolicy) FailedLocksLimit(n int) int                        { return n }
func (badPolicy) LockWaitTime(r time.Duration, n int) time.Duration { return r }

// waitHeld waits until every node's holder is owner's (an attempt of it).
func waitHeld(t *testing.T, ns []*fakeNode, owner string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, n := range ns {
		for !strings.HasPrefix(n.held(), owner) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: holder %q, want %s's", n.name, n.held(), owner)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
