package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
)

func batchedNode(t *testing.T, s *localredis.Server) *Node {
	t.Helper()
	c := redis.NewClient(Options(s.Addr()))
	t.Cleanup(func() { _ = c.Close() })
	n, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	if batchOf(n) == nil {
		t.Fatal("batching is off by default")
	}
	return n
}

// Many goroutines on distinct names through one batched node: every
// acquire, reentrant acquire and release answers as it would alone, and
// calls really were sent together; with several pipelines in flight and
// with one (onePipe).
func TestBatchedCallsAnswerAsAlone(t *testing.T) {
	for _, onePipe := range []bool{false, true} {
		t.Run(fmt.Sprint("onePipe=", onePipe), func(t *testing.T) { testBatchedCallsAnswerAsAlone(t, onePipe) })
	}
}

func testBatchedCallsAnswerAsAlone(t *testing.T, onePipe bool) {
	s := localredis.StartT(t, localredis.Config{})
	n := batchedNode(t, s)
	batchOf(n).onePipe = onePipe
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Go(func() {
			for i := range 20 {
				name := fmt.Sprintf("b-%d-%d", g, i)
				l := n.Lock(name, "owner", fmt.Sprintf("a-%d-%d", g, i), false)
				other := n.Lock(name, "other", "x", false)
				if ok, _, _, err := l.Acquire(ctx, time.Minute); !ok || err != nil {
					errs <- fmt.Errorf("%s: acquire %v %v", name, ok, err)
					return
				}
				if ok, rem, _, err := other.Acquire(ctx, time.Minute); ok || err != nil || rem <= 0 {
					errs <- fmt.Errorf("%s: other owner's acquire %v %v %v, want refused with a TTL", name, ok, rem, err)
					return
				}
				if ok, err := l.Release(ctx); !ok || err != nil {
					errs <- fmt.Errorf("%s: release %v %v", name, ok, err)
					return
				}
				if ok, err := other.Release(ctx); ok || err != nil {
					errs <- fmt.Errorf("%s: other's release %v %v, want false", name, ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := batchOf(n).pipelined.Load(); got == 0 {
		t.Error("no call went out in a pipeline: 64 goroutines never met a busy node?")
	} else {
		t.Logf("%d of %d calls went out in pipelines", got, 64*20*4)
	}
	left, err := s.Client().Keys(ctx, "quorumlock:{b-*").Result()
	if err != nil || len(left) != 0 {
		t.Errorf("keys left: %v %v", left, err)
	}
}

// A node that stops answering costs a queued caller its own deadline, not
// the deadline of the flight in front of it; and a call whose deadline
// passed while queued is never sent (a grant nobody waits for would hold
// the lock until its TTL).
func TestBatchedCallKeepsItsDeadline(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	n := batchedNode(t, s)
	ctx := t.Context()
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = s.Resume()
		}
	}()

	// The flights: calls with a long deadline occupy every flight of the
	// node while the server is stopped.
	flightCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	flight := make(chan error, batchOf(n).flights)
	for i := range batchOf(n).flights {
		go func() {
			_, err := n.Lock(fmt.Sprint("first-", i), "o", "a", false).Release(flightCtx)
			flight <- err
		}()
	}
	waitFor(t, func() bool {
		batchOf(n).mu.Lock()
		defer batchOf(n).mu.Unlock()
		return batchOf(n).busy == batchOf(n).flights
	})

	// Queued behind it: a short deadline.
	qctx, qcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer qcancel()
	start := time.Now()
	ok, _, _, err := n.Lock("queued", "o", "b", false).Acquire(qctx, time.Minute)
	waited := time.Since(start)
	if ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued acquire on a stopped node: %v %v, want DeadlineExceeded", ok, err)
	}
	select {
	case err := <-flight:
		t.Fatalf("the flight ended (%v) before the queued call gave up: the queued call was not waiting for its own deadline", err)
	default:
	}
	t.Logf("queued call gave up after %v; the flight's deadline is 3 s", waited)

	// A live call joins the queue: the next batch carries it and the
	// expired one, under the live one's deadline.
	live := make(chan error, 1)
	go func() {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ok, _, _, err := n.Lock("live", "o", "c", false).Acquire(lctx, time.Minute)
		if err == nil && !ok {
			err = errors.New("refused")
		}
		live <- err
	}()
	waitFor(t, func() bool { batchOf(n).mu.Lock(); defer batchOf(n).mu.Unlock(); return len(batchOf(n).queue) == 2 })
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	for range batchOf(n).flights {
		<-flight
	}
	if err := <-live; err != nil {
		t.Fatalf("live call queued behind the flight: %v", err)
	}
	// Let what was queued behind the flight go out (nothing should).
	waitFor(t, func() bool { batchOf(n).mu.Lock(); defer batchOf(n).mu.Unlock(); return batchOf(n).busy == 0 })
	k := n.Keys("queued").Lock
	if v, err := s.Client().Exists(ctx, k).Result(); err != nil || v != 0 {
		t.Fatalf("%s exists (%d, %v): the expired call was sent after its caller left", k, v, err)
	}
}

// After SCRIPT FLUSH (a restart does the same) a batched script call
// falls back to EVAL.
func TestBatchedScriptAfterFlush(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	n := batchedNode(t, s)
	ctx := t.Context()
	l := n.Lock("flushed", "o", "a", false)
	if ok, _, _, err := l.Acquire(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := s.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Release(ctx); !ok || err != nil {
		t.Fatalf("release after SCRIPT FLUSH: %v %v", ok, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// noDoneCtx has a deadline but a Done that never closes, as the multilock
// core's contexts for DeadlineBound calls (Lock.BoundByDeadline).
type noDoneCtx struct {
	context.Context
	dl time.Time
}

func (c noDoneCtx) Deadline() (time.Time, bool) { return c.dl, true }

// A call queued behind a busy flight leaves at its deadline even when its
// context's Done never closes: it must not wait for the flight to land.
func TestBatchedQueuedCallLeavesAtDeadline(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	n := batchedNode(t, s)
	batchOf(n).flights = 1
	landed := make(chan error, 1)
	go func() {
		// Occupies the only flight until the list gets an element (or
		// 5 s pass: a batcher that ignored the deadline fails, not hangs).
		_, err := batchOf(n).do(context.Background(), "blpop", "batch-hold", 5)
		landed <- err
	}()
	for {
		batchOf(n).mu.Lock()
		busy := batchOf(n).busy
		batchOf(n).mu.Unlock()
		if busy == 1 {
			break
		}
		time.Sleep(time.Millisecond) // poll: the batch turns busy when its round trip leaves
	}
	ctx := noDoneCtx{Context: context.Background(), dl: time.Now().Add(20 * time.Millisecond)}
	_, err := batchOf(n).do(ctx, "ping")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("queued call: %v, want context.DeadlineExceeded", err)
	}
	select {
	case err := <-landed:
		t.Fatalf("the flight landed (%v) before the queued call gave up: it waited for the flight", err)
	default:
	}
	if err := s.Client().LPush(t.Context(), "batch-hold", "x").Err(); err != nil {
		t.Fatal(err)
	}
	<-landed
}

// With onePipe, a call that finds a pipeline in flight queues behind it
// even though a flight is free; without, it goes straight out. The
// pipeline is a BLPOP that queued behind four others and was sent when
// the first of them landed.
func TestOnePipelineQueuesBehindPipeline(t *testing.T) {
	for _, onePipe := range []bool{true, false} {
		t.Run(fmt.Sprint("onePipe=", onePipe), func(t *testing.T) {
			s := localredis.StartT(t, localredis.Config{})
			n := batchedNode(t, s)
			batchOf(n).onePipe = onePipe
			b := batchOf(n)
			state := func() (busy, queued int, piping bool) {
				b.mu.Lock()
				defer b.mu.Unlock()
				return b.busy, len(b.queue), b.piping
			}
			ctx := t.Context()
			hold := func(key string, out chan<- error) {
				_, err := b.do(context.Background(), "blpop", key, 5)
				out <- err
			}
			first := make(chan error, b.flights)
			for range b.flights {
				go hold("hold-a", first)
			}
			waitFor(t, func() bool { busy, _, _ := state(); return busy == b.flights })
			piped := make(chan error, 1)
			go hold("hold-b", piped)
			waitFor(t, func() bool { _, q, _ := state(); return q == 1 })
			if err := s.Client().LPush(ctx, "hold-a", 1, 2, 3, 4).Err(); err != nil {
				t.Fatal(err)
			}
			for range b.flights {
				if err := <-first; err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, func() bool { busy, q, p := state(); return busy == 1 && q == 0 && p })

			pong := make(chan error, 1)
			go func() {
				v, err := b.do(ctx, "ping")
				if err == nil && v != "PONG" {
					err = fmt.Errorf("ping answered %v", v)
				}
				pong <- err
			}()
			if onePipe {
				waitFor(t, func() bool { _, q, _ := state(); return q == 1 })
				select {
				case err := <-pong:
					t.Fatalf("ping answered (%v) while the pipeline was in flight: it went straight out", err)
				case <-time.After(50 * time.Millisecond):
				}
			} else if err := <-pong; err != nil {
				t.Fatalf("ping with a free flight: %v", err)
			}
			if err := s.Client().LPush(ctx, "hold-b", 1).Err(); err != nil {
				t.Fatal(err)
			}
			if err := <-piped; err != nil {
				t.Fatal(err)
			}
			if onePipe {
				if err := <-pong; err != nil {
					t.Fatalf("ping queued behind the pipeline: %v", err)
				}
			}
			waitFor(t, func() bool { busy, q, p := state(); return busy == 0 && q == 0 && !p })
		})
	}
}
