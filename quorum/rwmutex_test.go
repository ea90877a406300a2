package quorum

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
)

func mustRW(t *testing.T, c *Client, name string, opts ...Option) *RWMutex {
	t.Helper()
	rw, err := c.RWMutex(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

func TestRWMutexSemantics(t *testing.T) {
	_, clients := cluster(t, 3)
	c := newClient(t, clients, WithFencing(true), WithAttemptTimeout(2*time.Second))
	ctx := t.Context()
	rw := mustRW(t, c, "doc")
	// Unlock returns once a majority released; the next step waits until
	// the last node has too, or a release still on its way to a slow node
	// (a loaded CI run) reads there as "held by another owner".
	unlock := func(l *Lease) {
		t.Helper()
		_ = l.Unlock(ctx)
		settle(t, c, "doc")
	}
	// step("what", want)(TryLock(...)) checks one acquisition.
	step := func(what string, want bool) func(*Lease, error) *Lease {
		return func(l *Lease, err error) *Lease {
			t.Helper()
			if (err == nil) != want {
				t.Fatalf("%s: lease %v, err %v; want granted=%v", what, l != nil, err, want)
			}
			if err != nil && !errors.Is(err, ErrNotObtained) {
				t.Fatalf("%s: %v, want ErrNotObtained", what, err)
			}
			return l
		}
	}

	r1 := step("first reader", true)(rw.TryRLock(ctx))
	r2 := step("second reader while the first reads", true)(rw.TryRLock(ctx))
	step("writer while two read", false)(rw.TryLock(ctx))
	if err := r1.Extend(ctx); err != nil {
		t.Fatalf("extend a read lease: %v", err)
	}
	unlock(r1)
	step("writer while one reads", false)(rw.TryLock(ctx))
	unlock(r2)
	w := step("writer once readers left", true)(rw.TryLock(ctx))
	step("reader while a writer writes", false)(rw.TryRLock(ctx))
	step("second writer", false)(rw.TryLock(ctx))
	// A Mutex of the same name is excluded too.
	step("Mutex of the same name", false)(mustMutex(t, c, "doc").TryLock(ctx))
	if err := w.Extend(ctx); err != nil {
		t.Fatalf("extend the write lease: %v", err)
	}
	tok := w.Token()
	unlock(w)
	w2 := step("next writer", true)(rw.TryLock(ctx))
	if w2.Token() <= tok {
		t.Fatalf("writer tokens %d then %d: want increasing", tok, w2.Token())
	}
	unlock(w2)

	// Reentrancy by owner: the writer may also read (downgrade), others may not.
	alice := mustRW(t, c, "doc", WithOwner("alice"))
	bob := mustRW(t, c, "doc", WithOwner("bob"))
	aw := step("alice writes", true)(alice.TryLock(ctx))
	aw2 := step("alice writes again (reentrant)", true)(alice.TryLock(ctx))
	ar := step("alice reads under her write lock", true)(alice.TryRLock(ctx))
	step("bob reads while alice writes", false)(bob.TryRLock(ctx))
	unlock(aw)
	step("bob reads while alice still holds one write", false)(bob.TryRLock(ctx))
	unlock(aw2)
	br := step("bob reads once alice only reads", true)(bob.TryRLock(ctx))
	step("bob cannot upgrade", false)(bob.TryLock(ctx))
	unlock(ar)
	unlock(br)
	step("free again", true)(bob.TryLock(ctx))
}

// tenureRW is one holder's time inside a read-write lock.
type tenureRW struct {
	who        string
	write      bool
	start, end time.Time
}

// rwViolations: a write tenure overlaps no other tenure.
func rwViolations(ts []tenureRW) (bad []string, readOverlaps int) {
	for i := range ts {
		for j := i + 1; j < len(ts); j++ {
			a, b := ts[i], ts[j]
			if !(a.start.Before(b.end) && b.start.Before(a.end)) {
				continue
			}
			if a.write || b.write {
				bad = append(bad, fmt.Sprintf("%s (write=%v) overlaps %s (write=%v)", a.who, a.write, b.who, b.write))
			} else {
				readOverlaps++
			}
		}
	}
	return bad, readOverlaps
}

// Readers and writers on 5 nodes with 2 frozen (SIGSTOP) the whole time,
// on two clients: on the shared history, no write tenure overlaps any other
// tenure, and readers do overlap.
func TestRWMutexSharedHistory(t *testing.T) {
	servers, clients := cluster(t, 5)
	t.Cleanup(func() {
		for _, s := range servers {
			if s.Paused() {
				_ = s.Resume()
			}
		}
	})
	for _, s := range servers[3:] {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	c1 := newClient(t, clients, WithTTL(2*time.Second), WithFencing(true))
	c2 := newClient(t, testutil.Clients(t, servers, nil), WithTTL(2*time.Second), WithFencing(true))
	// Resume before the clients close (cleanups run last-in first-out):
	// closing a pub/sub connection to a frozen node waits for its timeouts.
	t.Cleanup(func() {
		for _, s := range servers[3:] {
			_ = s.Resume()
		}
	})
	var (
		mu      sync.Mutex
		tenures []tenureRW
		wg      sync.WaitGroup
		tokens  []int64
	)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run := func(c *Client, who string, write bool, rounds int) {
		defer wg.Done()
		rw := mustRW(t, c, "history")
		for range rounds {
			var l *Lease
			var err error
			if write {
				l, err = rw.Lock(ctx)
			} else {
				l, err = rw.RLock(ctx)
			}
			if err != nil {
				t.Errorf("%s: %v", who, err)
				return
			}
			start := time.Now()
			time.Sleep(time.Duration(2+rand.N(8)) * time.Millisecond) // the holder's work, across which tenures would overlap if the lock let them
			end := time.Now()
			mu.Lock()
			tenures = append(tenures, tenureRW{who, write, start, end})
			if write {
				tokens = append(tokens, l.Token())
			}
			mu.Unlock()
			if err := l.Unlock(ctx); err != nil {
				t.Errorf("%s: Unlock: %v", who, err)
			}
		}
	}
	for i := range 4 {
		wg.Add(1)
		go run([]*Client{c1, c2}[i%2], fmt.Sprintf("reader %d", i), false, 10)
	}
	for i := range 2 {
		wg.Add(1)
		go run([]*Client{c1, c2}[i%2], fmt.Sprintf("writer %d", i), true, 6)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	bad, overlaps := rwViolations(tenures)
	t.Logf("%d tenures, %d overlapping read pairs", len(tenures), overlaps)
	if len(bad) > 0 {
		t.Fatalf("exclusion violated: %v", bad)
	}
	if overlaps == 0 {
		t.Fatalf("no two readers ever read at once in %d tenures", len(tenures))
	}
}

// settle waits until every node of c reports the same state of lock name
// (holders, mode): the releases an Unlock left on their way have landed.
func settle(t *testing.T, c *Client, name string) {
	t.Helper()
	type view struct {
		present bool
		holders map[string]int64
		mode    string
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var views []view
		for _, n := range c.nodes {
			st, err := n.Inspect(t.Context(), name)
			if err != nil {
				t.Fatalf("settle %s: %v", name, err)
			}
			views = append(views, view{st.Present, st.Holders, st.Mode})
		}
		same := true
		for _, v := range views[1:] {
			same = same && reflect.DeepEqual(v, views[0])
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes still disagree on %s after 10 s: %+v", name, views)
		}
		time.Sleep(time.Millisecond) // poll: the late releases land with no event to wait on
	}
}
