package multilock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/drift"
)

// fakeNode is an in-memory node in the spirit of raft's in-memory transport:
// it can be made to refuse, fail, hang or be slow, without a network.
type fakeNode struct {
	name string

	mu      sync.Mutex
	holder  string // attempt holding it
	fence   int64
	stored  int64 // fencing counter written back
	down    bool  // calls fail at once
	fail    error // when set, calls fail at once with it
	hang    bool  // calls block until ctx ends
	advance time.Duration
	clock   *drift.Fake
	calls   int
}

var errDown = errors.New("connection refused")

type fakeLock struct {
	n       *fakeNode
	attempt string
}

func (l *fakeLock) String() string { return l.n.name }

func (n *fakeNode) enter(ctx context.Context) error {
	n.mu.Lock()
	n.calls++
	down, hang, adv, clk, fail := n.down, n.hang, n.advance, n.clock, n.fail
	n.mu.Unlock()
	if adv > 0 && clk != nil {
		clk.Advance(adv)
	}
	if fail != nil {
		return fail
	}
	if down {
		return errDown
	}
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (l *fakeLock) Acquire(ctx context.Context, ttl time.Duration) (bool, time.Duration, int64, error) {
	if err := l.n.enter(ctx); err != nil {
		return false, 0, 0, err
	}
	n := l.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.holder != "" && n.holder != l.attempt {
		return false, 7 * time.Second, 0, nil
	}
	if n.holder == "" {
		n.fence = max(n.fence, n.stored) + 1
	}
	n.holder = l.attempt
	return true, 0, n.fence, nil
}

func (l *fakeLock) Extend(ctx context.Context, ttl time.Duration) (bool, error) {
	if err := l.n.enter(ctx); err != nil {
		return false, err
	}
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	return l.n.holder == l.attempt, nil
}

func (l *fakeLock) Release(ctx context.Context) (bool, error) {
	if err := l.n.enter(ctx); err != nil {
		return false, err
	}
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	if l.n.holder != l.attempt {
		return false, nil
	}
	l.n.holder = ""
	return true, nil
}

func (l *fakeLock) Fence(ctx context.Context, token int64) (bool, error) {
	if err := l.n.enter(ctx); err != nil {
		return false, err
	}
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	if l.n.holder != l.attempt {
		return false, nil
	}
	l.n.stored = max(l.n.stored, token)
	return true, nil
}

func (n *fakeNode) set(f func(n *fakeNode)) {
	n.mu.Lock()
	f(n)
	n.mu.Unlock()
}

func (n *fakeNode) held() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.holder
}

func fakeNodes(k int) []*fakeNode {
	ns := make([]*fakeNode, k)
	for i := range ns {
		ns[i] = &fakeNode{name: fmt.Sprintf("fake-%d", i)}
	}
	return ns
}

func lockers(ns []*fakeNode, attempt string) []Locker {
	ls := make([]Locker, len(ns))
	for i, n := range ns {
		ls[i] = &fakeLock{n: n, attempt: attempt}
	}
	return ls
}
