package quorum

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// rawFloor is the least a lock on n nodes can cost: SET NX PX and a Lua
// compare-and-delete, fanned out with one goroutine per node.
type rawFloor struct {
	clients []redis.UniversalClient
	seq     atomic.Int64
}

var rawDel = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

func (r *rawFloor) each(fn func(c redis.UniversalClient)) {
	if len(r.clients) == 1 {
		fn(r.clients[0])
		return
	}
	var wg sync.WaitGroup
	for _, c := range r.clients {
		wg.Add(1)
		go func() { defer wg.Done(); fn(c) }()
	}
	wg.Wait()
}

func (r *rawFloor) lockUnlock(ctx context.Context, key string) error {
	val := strconv.FormatInt(r.seq.Add(1), 10)
	var granted atomic.Int32
	r.each(func(c redis.UniversalClient) {
		if ok, _ := c.SetNX(ctx, key, val, 10*time.Second).Result(); ok {
			granted.Add(1)
		}
	})
	if int(granted.Load()) < len(r.clients)/2+1 {
		return fmt.Errorf("raw floor not granted")
	}
	r.each(func(c redis.UniversalClient) { _ = rawDel.Run(ctx, c, []string{key}, val).Err() })
	return nil
}

// BenchmarkLockUnlock measures uncontended Lock+Unlock pairs per second
// against the raw floor on the same nodes, interleaved in chunks (A B A B …)
// so machine drift hits both alike. Metrics: ops/s (quorumlock), raw-ops/s
// and x-raw (the ratio). Each goroutine uses its own lock name.
func BenchmarkLockUnlock(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		for _, g := range []int{1, 16} {
			b.Run(fmt.Sprintf("N=%d/goroutines=%d", n, g), func(b *testing.B) {
				benchLockUnlock(b, n, g, false)
			})
		}
	}
}

func benchLockUnlock(b *testing.B, n, g int, fencing bool) {
	_, clients := testutil.Servers(b, n, localredis.Config{})
	opts := []Option{}
	if fencing {
		opts = append(opts, WithFencing(true))
	}
	c, err := New(clients, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	raw := &rawFloor{clients: clients}
	ctx := context.Background()
	mutexes := make([]*Mutex, g)
	for i := range mutexes {
		mutexes[i], _ = c.Mutex("bench-" + strconv.Itoa(i))
	}
	run := func(ops int, fn func(w int) error) time.Duration {
		var wg sync.WaitGroup
		var left atomic.Int64
		left.Store(int64(ops))
		start := time.Now()
		for w := range g {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					if err := fn(w); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	ours := func(w int) error {
		l, err := mutexes[w].Lock(ctx)
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	floor := func(w int) error { return raw.lockUnlock(ctx, "raw-"+strconv.Itoa(w)) }
	const chunks = 10
	chunk := max(b.N/chunks, 1)
	var tOurs, tRaw time.Duration
	var nOurs, nRaw int
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		tOurs += run(chunk, ours)
		nOurs += chunk
		tRaw += run(chunk, floor)
		nRaw += chunk
	}
	b.StopTimer()
	oursRate := float64(nOurs) / tOurs.Seconds()
	rawRate := float64(nRaw) / tRaw.Seconds()
	b.ReportMetric(oursRate, "ops/s")
	b.ReportMetric(rawRate, "raw-ops/s")
	b.ReportMetric(oursRate/rawRate, "x-raw")
}

// BenchmarkLockUnlockFencing is Lock+Unlock with fencing tokens on 5 nodes,
// next to the same without fencing in the same run (metric x-unfenced).
func BenchmarkLockUnlockFencing(b *testing.B) {
	_, clients := testutil.Servers(b, 5, localredis.Config{})
	ctx := context.Background()
	mk := func(opts ...Option) *Mutex {
		c, err := New(clients, opts...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		m, _ := c.Mutex("fence-bench")
		return m
	}
	fenced, plain := mk(WithFencing(true)), mk()
	var tf, tp time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, m := range []*Mutex{fenced, plain} {
			start := time.Now()
			l, err := m.Lock(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
			if k == 0 {
				tf += time.Since(start)
			} else {
				tp += time.Since(start)
			}
		}
	}
	b.ReportMetric(float64(b.N)/tf.Seconds(), "fenced-ops/s")
	b.ReportMetric(float64(b.N)/tp.Seconds(), "unfenced-ops/s")
	b.ReportMetric(tp.Seconds()/tf.Seconds(), "x-unfenced")
}

// BenchmarkHandoff: 8 goroutines on one name; after unlocking, the releaser
// sits out until another goroutine acquired, so every acquisition is a
// hand-off. Metrics: acq/s, gap-p50-ms (from the releaser's Unlock call to
// the next acquisition), min/max acquisitions per goroutine.
func BenchmarkHandoff(b *testing.B) {
	for _, n := range []int{1, 5} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			_, clients := testutil.Servers(b, n, localredis.Config{})
			c, err := New(clients)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			m, _ := c.Mutex("handoff")
			r := Handoff(context.Background(), m, 8, max(b.N, 16))
			if r.Err != nil {
				b.Fatal(r.Err)
			}
			b.ReportMetric(r.PerSecond, "acq/s")
			b.ReportMetric(float64(r.MedianGap.Microseconds())/1000, "gap-p50-ms")
			b.ReportMetric(r.MinMax, "min/max")
		})
	}
}

// HandoffResult is what a forced hand-off run measured.
type HandoffResult struct {
	Acquisitions int
	PerSecond    float64
	MedianGap    time.Duration
	PerWorker    []int
	MinMax       float64
	Err          error
}

// handoffLocker is what the hand-off workload locks: a Mutex or a FairMutex.
type handoffLocker interface {
	Lock(ctx context.Context) (*Lease, error)
}

// Handoff runs the forced hand-off workload: workers goroutines contend on m;
// each releaser waits until another acquired before trying again.
func Handoff(ctx context.Context, m handoffLocker, workers, total int) HandoffResult {
	return HandoffOn(ctx, []handoffLocker{m}, workers, total)
}

// HandoffOn is Handoff with worker w locking ms[w%len(ms)] (one lock handle
// per client, to spread the workers over clients).
func HandoffOn(ctx context.Context, ms []handoffLocker, workers, total int) HandoffResult {
	var (
		mu        sync.Mutex
		cond      = sync.NewCond(&mu)
		count     int
		lastOwner = -1
		released  time.Time
		gaps      []time.Duration
		per       = make([]int, workers)
		firstErr  error
	)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				for lastOwner == w && count < total && firstErr == nil {
					cond.Wait()
				}
				stop := count >= total || firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
				l, err := ms[w%len(ms)].Lock(ctx)
				if err != nil {
					mu.Lock()
					firstErr = err
					cond.Broadcast()
					mu.Unlock()
					return
				}
				now := time.Now()
				mu.Lock()
				if !released.IsZero() {
					gaps = append(gaps, now.Sub(released))
				}
				count++
				per[w]++
				lastOwner = w
				released = time.Now()
				cond.Broadcast()
				mu.Unlock()
				if err := l.Unlock(ctx); err != nil {
					mu.Lock()
					firstErr = err
					cond.Broadcast()
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	slices.Sort(gaps)
	r := HandoffResult{Acquisitions: count, PerSecond: float64(count) / el.Seconds(), PerWorker: per, Err: firstErr}
	if len(gaps) > 0 {
		r.MedianGap = gaps[len(gaps)/2]
	}
	lo, hi := slices.Min(per), slices.Max(per)
	if hi > 0 {
		r.MinMax = float64(lo) / float64(hi)
	}
	return r
}
