package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/multilock"
)

// memNode is a lock kept in memory, enough to show the core without Redis.
type memNode struct {
	name string
	mu   sync.Mutex
	by   string // the attempt holding it, "" when free
}

// memLock is one attempt's sub-lock on a memNode: the Locker the core drives.
type memLock struct {
	n       *memNode
	attempt string
}

func (l memLock) String() string { return l.n.name }

func (l memLock) Acquire(_ context.Context, ttl time.Duration) (bool, time.Duration, int64, error) {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	if l.n.by != "" && l.n.by != l.attempt {
		return false, ttl, 0, nil // refused: held by another owner
	}
	l.n.by = l.attempt
	return true, 0, 0, nil
}

func (l memLock) Extend(context.Context, time.Duration) (bool, error) {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	return l.n.by == l.attempt, nil
}

func (l memLock) Release(context.Context) (bool, error) {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	held := l.n.by == l.attempt
	if held {
		l.n.by = ""
	}
	return held, nil
}

// One of three nodes is held by someone else. A RedLock (Majority) needs
// two of three and gets them; a MultiLock (All) needs every node and does
// not (the nodes it got are given back).
func ExampleMultiLock_Acquire() {
	attempt := func(p multilock.Policy) *multilock.MultiLock {
		nodes := []*memNode{{name: "a"}, {name: "b"}, {name: "c", by: "other"}}
		ls := make([]multilock.Locker, len(nodes))
		for i, n := range nodes {
			ls[i] = memLock{n: n, attempt: "mine"}
		}
		ml, err := multilock.New(ls, multilock.WithPolicy(p))
		if err != nil {
			panic(err)
		}
		return ml
	}
	ctx := context.Background()

	ok, _, _, err := attempt(multilock.All).Acquire(ctx, 10*time.Second)
	fmt.Println("all:", ok, errors.Is(err, multilock.ErrNotObtained), errors.Is(err, multilock.ErrTaken))

	red := attempt(multilock.Majority)
	ok, _, _, err = red.Acquire(ctx, 10*time.Second)
	fmt.Println("majority:", ok, err, "validity set:", !red.Until().IsZero())
	released, err := red.Release(ctx)
	fmt.Println("released:", released, err)
	// Output:
	// all: false true true
	// majority: true <nil> validity set: true
	// released: true <nil>
}

// The policies' arithmetic: how many of n sub-locks must grant.
func ExampleNeed() {
	for _, n := range []int{1, 3, 5} {
		fmt.Printf("n=%d: majority %d, all %d\n", n, multilock.Need(multilock.Majority, n), multilock.Need(multilock.All, n))
	}
	// Output:
	// n=1: majority 1, all 1
	// n=3: majority 2, all 3
	// n=5: majority 3, all 5
}
