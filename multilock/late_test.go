package multilock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedLock is a fakeLock whose calls can be held at chosen points, to put
// a straggling grant and the release of the same attempt in a given order.
type gatedLock struct {
	*fakeLock
	beforeAcquire chan struct{} // Acquire waits for it before it runs (nil: no wait)
	afterAcquire  chan struct{} // … and after it ran, before it answers
	afterRelease  chan struct{} // Release waits after it ran, before it answers
	acquired      chan struct{} // closed once Acquire ran
	releaseRan    chan struct{} // closed once the first Release ran
	releases      atomic.Int32
}

func newGated(n *fakeNode, attempt string) *gatedLock {
	return &gatedLock{fakeLock: &fakeLock{n: n, attempt: attempt}, acquired: make(chan struct{}), releaseRan: make(chan struct{})}
}

func wait(ch chan struct{}) {
	if ch != nil {
		<-ch
	}
}

func (g *gatedLock) Acquire(ctx context.Context, ttl time.Duration) (bool, time.Duration, int64, error) {
	wait(g.beforeAcquire)
	ok, r, f, err := g.fakeLock.Acquire(ctx, ttl)
	close(g.acquired)
	wait(g.afterAcquire)
	return ok, r, f, err
}

func (g *gatedLock) Release(ctx context.Context) (bool, error) {
	ok, err := g.fakeLock.Release(ctx)
	if g.releases.Add(1) == 1 {
		close(g.releaseRan)
		wait(g.afterRelease)
	}
	return ok, err
}

// A grant that answers after the quorum was decided and after Release began
// is given back again only when Release did not free it (it ran after the
// release); when Release freed it, no second round trip is made.
func TestLateGrantAfterRelease(t *testing.T) {
	tests := []struct {
		name string
		// order drives the straggler (sub-lock 2) once Release has returned.
		setup        func(g *gatedLock)
		order        func(g *gatedLock, release func())
		wantReleases int32
	}{
		{
			name:  "release freed the grant",
			setup: func(g *gatedLock) { g.afterAcquire = make(chan struct{}) },
			order: func(g *gatedLock, release func()) {
				<-g.acquired // the straggler's grant has run (its answer is held)
				release()    // runs after the grant: frees it
				close(g.afterAcquire)
			},
			wantReleases: 1,
		},
		{
			name:  "grant ran after the release, release answered first",
			setup: func(g *gatedLock) { g.beforeAcquire = make(chan struct{}) },
			order: func(g *gatedLock, release func()) {
				release()
				<-g.releaseRan // found nothing
				close(g.beforeAcquire)
			},
			wantReleases: 2,
		},
		{
			name: "grant ran after the release, grant answered first",
			setup: func(g *gatedLock) {
				g.beforeAcquire = make(chan struct{})
				g.afterRelease = make(chan struct{})
			},
			order: func(g *gatedLock, release func()) {
				go release()
				<-g.releaseRan // found nothing; its answer is held
				close(g.beforeAcquire)
				<-g.acquired
				time.Sleep(20 * time.Millisecond) // let the late grant be recorded: MultiLock has no hook that says it was
				close(g.afterRelease)
			},
			wantReleases: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := fakeNodes(3)
			ls := lockers(ns, "a")
			g := newGated(ns[2], "a")
			tt.setup(g)
			ls[2] = g
			var wg sync.WaitGroup
			m := newML(t, ls, WithTracker(&wg))
			if ok, _, _, err := m.Acquire(t.Context(), time.Second); !ok {
				t.Fatal(err)
			}
			released := make(chan struct{})
			tt.order(g, func() {
				if ok, err := m.Release(t.Context()); !ok {
					t.Error(err)
				}
				close(released)
			})
			<-released
			wg.Wait()
			if got := g.releases.Load(); got != tt.wantReleases {
				t.Errorf("straggler released %d times, want %d", got, tt.wantReleases)
			}
			for _, n := range ns {
				if h := n.held(); h != "" {
					t.Errorf("%s still held by %q", n.name, h)
				}
			}
		})
	}
}

// keeperLock stores the fencing counter it reports, as the node scripts do.
type keeperLock struct {
	*fakeLock
	fences *atomic.Int32
}

func (k keeperLock) Acquire(ctx context.Context, ttl time.Duration) (bool, time.Duration, int64, error) {
	ok, r, f, err := k.fakeLock.Acquire(ctx, ttl)
	if ok {
		k.n.set(func(n *fakeNode) { n.stored = max(n.stored, f) })
	}
	return ok, r, f, err
}

func (k keeperLock) Fence(ctx context.Context, token int64) (bool, error) {
	k.fences.Add(1)
	return k.fakeLock.Fence(ctx, token)
}

func (keeperLock) KeepsFence() bool { return true }

// The write-back round trip is skipped only when a quorum of grants
// reported the token itself; otherwise it runs, only on the granting nodes
// that reported less, and a quorum stores it.
func TestFenceWriteBackSkippedWhenQuorumStoresIt(t *testing.T) {
	tests := []struct {
		name       string
		stored     []int64 // counters before the attempt
		down       int     // index of a node that fails, -1 for none
		wantToken  int64
		wantFences int32 // write-backs sent
	}{
		{"in step", []int64{7, 7, 7}, -1, 8, 0},
		{"quorum at the max, one down", []int64{7, 7, 3}, 2, 8, 0},
		{"one behind, one down", []int64{7, 3, 7}, 2, 8, 1},
		{"apart, one down", []int64{9, 3, 5}, 2, 10, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := fakeNodes(3)
			var fences atomic.Int32
			ls := make([]Locker, len(ns))
			for i, n := range ns {
				n.stored = tt.stored[i]
				n.down = i == tt.down
				ls[i] = keeperLock{fakeLock: &fakeLock{n: n, attempt: "a"}, fences: &fences}
			}
			var wg sync.WaitGroup
			m := newML(t, ls, WithFencing(true), WithTracker(&wg))
			ok, _, tok, err := m.Acquire(t.Context(), time.Second)
			wg.Wait()
			if !ok || tok != tt.wantToken {
				t.Fatalf("token %d (%v, %v), want %d", tok, ok, err, tt.wantToken)
			}
			if got := fences.Load(); got != tt.wantFences {
				t.Errorf("write-backs: %d, want %d", got, tt.wantFences)
			}
			at := 0
			for _, n := range ns {
				n.mu.Lock()
				if n.stored >= tok {
					at++
				}
				n.mu.Unlock()
			}
			if at < 2 {
				t.Errorf("token stored on %d nodes, want a majority", at)
			}
			if _, err := m.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
		})
	}
}

// After a failed attempt, a sub-lock that had not answered yet is given back
// when its answer is a grant or an error (a grant may hide behind it), and
// costs nothing when it is a refusal.
func TestLateAnswerAfterFailure(t *testing.T) {
	tests := []struct {
		name         string
		straggler    func(n *fakeNode)
		wantReleases int32
	}{
		{"refusal", func(n *fakeNode) { n.holder = "other" }, 0},
		{"grant", func(n *fakeNode) {}, 1},
		{"error", func(n *fakeNode) { n.down = true }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := fakeNodes(3)
			ns[0].holder, ns[1].holder = "other", "other"
			ls := lockers(ns, "a")
			g := newGated(ns[2], "a")
			g.beforeAcquire = make(chan struct{})
			ls[2] = g
			var wg sync.WaitGroup
			m := newML(t, ls, WithTracker(&wg))
			if ok, _, _, err := m.Acquire(t.Context(), time.Second); ok {
				t.Fatal("acquired a lock two of three refused")
			} else if err == nil {
				t.Fatal("no error")
			}
			ns[2].set(tt.straggler)
			close(g.beforeAcquire)
			wg.Wait()
			if got := g.releases.Load(); got != tt.wantReleases {
				t.Errorf("straggler released %d times, want %d", got, tt.wantReleases)
			}
			if h := ns[2].held(); h == "a" {
				t.Errorf("%s left held by the failed attempt", ns[2].name)
			}
		})
	}
}
