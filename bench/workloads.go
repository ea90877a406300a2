package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/bench/adapters"
)

// sample is what one implementation did in one round.
type sample struct {
	ops       int
	elapsed   time.Duration
	lat       []time.Duration // per op: what the case's metric names
	gaps      []time.Duration // hand-off: release call → next acquisition
	perWorker []int           // hand-off: acquisitions per goroutine
	errs      int
	firstErr  error
	// Filled in by the runner.
	mallocs   uint64
	clientCPU time.Duration
	serverCPU time.Duration
	stats     map[string]int64
}

func (s *sample) fail(err error) {
	s.errs++
	if s.firstErr == nil {
		s.firstErr = err
	}
}

// unlockTimeout bounds every Unlock in the workloads.
const unlockTimeout = 30 * time.Second

func mutex(e *entry, name string) adapters.Mutex {
	m, err := e.locker.Mutex(name)
	if err != nil {
		panic(fmt.Sprintf("bench: %s: %v", e.label(), err)) // names are ours: a bug
	}
	return m
}

// pairs: g goroutines, each on its own name, Lock+Unlock as fast as they can
// for d (every goroutine finishes at least one pair).
// lockGrace is how long past its round a throughput case's Lock may run.
const lockGrace = 2 * time.Second

func pairs(g int, d time.Duration) workload {
	return func(ctx context.Context, e *entry, name string) sample {
		ms := make([]adapters.Mutex, g)
		for w := range ms {
			ms[w] = mutex(e, name+":"+strconv.Itoa(w))
		}
		lats := make([][]time.Duration, g)
		errs := make([]error, g)
		nerr := make([]int, g)
		var wg sync.WaitGroup
		start := time.Now()
		end := start.Add(d)
		// No Lock may outlast the round by more than lockGrace: a peer's
		// Lock that never returns (rueidislock's did once here, on a free
		// name) becomes an error in its row instead of a run that hangs.
		lctx, cancel := context.WithDeadline(ctx, end.Add(lockGrace))
		defer cancel()
		for w := range g {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lat := make([]time.Duration, 0, 4096)
				for {
					t0 := time.Now()
					l, err := ms[w].Lock(lctx)
					if err == nil {
						err = l.Unlock(ctx)
					}
					t1 := time.Now()
					if err != nil {
						nerr[w]++
						if errs[w] == nil {
							errs[w] = err
						}
						if ctx.Err() != nil {
							break
						}
					} else {
						lat = append(lat, t1.Sub(t0))
					}
					if !t1.Before(end) {
						break
					}
				}
				lats[w] = lat
			}()
		}
		wg.Wait()
		s := sample{elapsed: time.Since(start)}
		for w := range g {
			s.lat = append(s.lat, lats[w]...)
			s.errs += nerr[w]
			if s.firstErr == nil {
				s.firstErr = errs[w]
			}
		}
		s.ops = len(s.lat)
		return s
	}
}

const handoffWorkers = 8

// handoff: 8 goroutines on one name for d. After unlocking, a goroutine sits
// out until another one acquired, so every acquisition is a hand-off. A
// holder keeps the lock for hold (a short critical section). Latency is each
// Lock's wait; gap is from the previous holder's Unlock call to the next
// Lock's return; perWorker shows fairness.
//
// Without a hold, the goroutine that sat out re-enters Lock at the moment
// the next holder acquired, and its first try tends to land just after that
// holder's (immediate) release: the lock is relayed between two goroutines
// that happen to arrive at the right moment, while the waiters that poll
// starve. That measures arrival timing, not waking a waiter; with a hold,
// every contender is waiting when the lock is released.
func handoff(d, hold time.Duration) workload {
	return func(ctx context.Context, e *entry, name string) sample {
		m := mutex(e, name)
		locks := make([]lockFunc, handoffWorkers)
		for w := range locks {
			locks[w] = func(ctx context.Context) (unlocker, error) { return m.Lock(ctx) }
		}
		return contend(ctx, locks, d, hold, true)
	}
}

// unlocker is a held lock of any implementation.
type unlocker interface{ Unlock(context.Context) error }

// lockFunc waits for a lock until it is obtained or ctx ends.
type lockFunc func(ctx context.Context) (unlocker, error)

// contend runs one goroutine per lock (all on the same name), each taking
// its lock, keeping it for hold and releasing it, for d. With sitOut a
// goroutine that released waits until another one acquired. Latency is
// each Lock's wait; gap is from the previous holder's Unlock call to the
// next Lock's return, whoever holds; perWorker counts acquisitions per
// goroutine.
func contend(ctx context.Context, locks []lockFunc, d, hold time.Duration, sitOut bool) sample {
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		last     = -1
		released time.Time
		s        = sample{perWorker: make([]int, len(locks))}
		stopped  atomic.Bool
	)
	// Wake sitters when the round ends.
	go func() {
		<-rctx.Done()
		stopped.Store(true)
		mu.Lock()
		cond.Broadcast()
		mu.Unlock()
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for w, lock := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				for sitOut && last == w && !stopped.Load() {
					cond.Wait()
				}
				mu.Unlock()
				if stopped.Load() {
					return
				}
				t0 := time.Now()
				l, err := lock(rctx)
				now := time.Now()
				if err != nil {
					if rctx.Err() == nil {
						mu.Lock()
						s.fail(err)
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				if !stopped.Load() {
					if !released.IsZero() {
						s.gaps = append(s.gaps, now.Sub(released))
					}
					s.lat = append(s.lat, now.Sub(t0))
					s.perWorker[w]++
				}
				last = w
				cond.Broadcast()
				mu.Unlock()
				holdAndRelease(ctx, l, hold, &mu, &released, &s)
			}
		}()
	}
	wg.Wait()
	s.elapsed = min(time.Since(start), d)
	s.ops = len(s.lat)
	return s
}

// holdAndRelease keeps a held lock for hold, notes under mu when its
// release began, and unlocks it (within unlockTimeout, also after ctx
// ended: a round's end must not leave the lock held), counting a failed
// Unlock in s.
func holdAndRelease(ctx context.Context, l unlocker, hold time.Duration, mu *sync.Mutex, released *time.Time, s *sample) {
	if hold > 0 {
		time.Sleep(hold)
	}
	mu.Lock()
	*released = time.Now()
	mu.Unlock()
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	err := l.Unlock(uctx)
	cancel()
	if err != nil {
		mu.Lock()
		s.fail(err)
		mu.Unlock()
	}
}

// frozenPairs: one goroutine, Lock+Unlock for d (at least one pair), with
// some nodes frozen. Latency is the Lock's.
func frozenPairs(d time.Duration) workload {
	return func(ctx context.Context, e *entry, name string) sample {
		m := mutex(e, name)
		var s sample
		start := time.Now()
		for {
			t0 := time.Now()
			l, err := m.Lock(ctx)
			t1 := time.Now()
			if err != nil {
				s.fail(err)
			} else {
				s.lat = append(s.lat, t1.Sub(t0))
				uctx, cancel := context.WithTimeout(ctx, unlockTimeout)
				if err := l.Unlock(uctx); err != nil {
					s.fail(err)
				}
				cancel()
			}
			if time.Since(start) >= d || ctx.Err() != nil {
				break
			}
		}
		s.elapsed = time.Since(start)
		s.ops = len(s.lat)
		return s
	}
}

// errObtained: a case that must fail to lock got the lock.
var errObtained = errors.New("obtained a lock that a quorum of frozen nodes should have refused")

// tryFail: TryLock with a majority frozen, for d (at least once). Latency is
// how long the failing TryLock took.
func tryFail(d time.Duration) workload {
	return func(ctx context.Context, e *entry, name string) sample {
		m := mutex(e, name)
		var s sample
		start := time.Now()
		for {
			t0 := time.Now()
			l, err := m.TryLock(ctx)
			s.lat = append(s.lat, time.Since(t0))
			switch {
			case err == nil:
				s.fail(errObtained)
				_ = l.Unlock(ctx)
			case !errors.Is(err, adapters.ErrNotObtained):
				s.fail(err)
			}
			if time.Since(start) >= d || ctx.Err() != nil {
				break
			}
		}
		s.elapsed = time.Since(start)
		s.ops = len(s.lat)
		return s
	}
}

// lockDeadline: one Lock with a budget deadline, with a majority frozen.
// Latency is how long it took to give up.
func lockDeadline(budget time.Duration) workload {
	return func(ctx context.Context, e *entry, name string) sample {
		m := mutex(e, name)
		var s sample
		start := time.Now()
		lctx, cancel := context.WithTimeout(ctx, budget)
		l, err := m.Lock(lctx)
		cancel()
		s.lat = append(s.lat, time.Since(start))
		switch {
		case err == nil:
			s.fail(errObtained)
			_ = l.Unlock(ctx)
		case !errors.Is(err, adapters.ErrNotObtained):
			s.fail(err)
		}
		s.elapsed = time.Since(start)
		s.ops = len(s.lat)
		return s
	}
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func sortedCopy(d []time.Duration) []time.Duration {
	out := slices.Clone(d)
	slices.Sort(out)
	return out
}
