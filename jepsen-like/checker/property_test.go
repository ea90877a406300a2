package checker

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
)

var update = flag.Bool("update", false, "rewrite the histories under testdata/")

var (
	errTaken   = errors.New("lock taken")
	errTimeout = errors.New("i/o timeout")
)

// serialRun drives a correct lock serially through the real Recorder and
// resource on a manual clock: random workers, failed and timed-out
// acquisitions, extends, repeated writes, tenures that write nothing,
// nemesis events. Every check must pass on such a history.
func serialRun(seed uint64, n int, fenced, tokens bool) history.History {
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	clk := history.NewManualClock(0)
	rec := history.NewRecorder(clk)
	ctr := resource.NewUnfenced(rec)
	if fenced {
		ctr = resource.NewFenced(rec)
	}
	jitter := func(max time.Duration) { clk.Advance(time.Duration(rng.Int64N(int64(max)))) }
	const ttl = 30 * time.Millisecond
	workers := 1 + rng.IntN(5)
	var token uint64
	faults := map[string]bool{}
	for range n {
		jitter(2 * time.Millisecond)
		if rng.IntN(8) == 0 {
			name := fmt.Sprintf("fault-%d", rng.IntN(3))
			if faults[name] {
				rec.NemesisEnd(name).Ok()
			} else {
				rec.NemesisStart(name).Ok()
			}
			faults[name] = !faults[name]
		}
		w := rng.IntN(workers)
		a := rec.Acquire(w)
		jitter(time.Millisecond)
		switch rng.IntN(10) {
		case 0:
			a.Fail(errTaken)
			continue
		case 1:
			a.Unknown(errTimeout)
			continue
		}
		var tok uint64
		if tokens {
			token++
			tok = token
		}
		now := clk.Now()
		a.Acquired(tok, now+ttl)
		if rng.IntN(6) > 0 { // some tenures do no work
			v := ctr.Read(w, a.ID())
			jitter(10 * time.Millisecond)
			if rng.IntN(4) == 0 {
				e := rec.Extend(w, a.ID())
				e.Extended(clk.Now() + ttl)
			}
			if err := ctr.Write(w, a.ID(), v+1, tok); err != nil {
				panic(err) // a correct serial run is never fenced off
			}
			if rng.IntN(5) == 0 { // a second, blind increment under the same lease
				if err := ctr.Write(w, a.ID(), v+2, tok); err != nil {
					panic(err)
				}
			}
		}
		jitter(time.Millisecond)
		r := rec.Release(w, a.ID())
		jitter(time.Millisecond)
		if rng.IntN(10) == 0 {
			r.Unknown(errTimeout)
		} else {
			r.Ok()
		}
	}
	return rec.History()
}

func assertAllPass(t *testing.T, h history.History, tokens bool) Report {
	t.Helper()
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	r := Check(h, WithTimeout(20*time.Second))
	want := map[string]expect{}
	if !tokens && r.Acquires.Ok > 0 {
		want["token_order"] = expect{Unknown, 0}
	}
	assertChecks(t, r, want)
	if r.LostUpdates.Deficit != 0 {
		t.Errorf("deficit %d in a serial run", r.LostUpdates.Deficit)
	}
	return r
}

func TestSerialRunsPass(t *testing.T) {
	for seed := range uint64(12) {
		for _, mode := range []struct{ fenced, tokens bool }{{false, true}, {true, true}, {false, false}} {
			t.Run(fmt.Sprintf("seed=%d/fenced=%v/tokens=%v", seed, mode.fenced, mode.tokens), func(t *testing.T) {
				h := serialRun(seed, 150, mode.fenced, mode.tokens)
				r := assertAllPass(t, h, mode.tokens)
				if r.Acquires.Attempted != 150 || r.Acquires.Availability <= 0.5 {
					t.Errorf("acquires = %+v", r.Acquires)
				}
			})
		}
	}
}

func FuzzSerialRunPasses(f *testing.F) {
	f.Add(uint64(1), uint8(40), false, true)
	f.Add(uint64(7), uint8(3), true, false)
	f.Add(uint64(99), uint8(200), true, true)
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, fenced, tokens bool) {
		assertAllPass(t, serialRun(seed, int(n), fenced, tokens), tokens)
	})
}

// A real in-process mutex as the lock, real goroutines, the real clock: the
// checks must all pass under the race detector.
func TestConcurrentCorrectLockPasses(t *testing.T) {
	rec := history.NewRecorder(history.NewClock())
	ctr := resource.NewFenced(rec)
	var mu sync.Mutex
	var token uint64
	const workers, rounds = 6, 150
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				a := rec.Acquire(w)
				mu.Lock()
				token++
				tok := token
				a.Acquired(tok, rec.Clock().Now()+time.Hour)
				v := ctr.Read(w, a.ID())
				if err := ctr.Write(w, a.ID(), v+1, tok); err != nil {
					t.Error(err)
				}
				rec.Release(w, a.ID()).Ok() // invoked while still holding the mutex
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	r := assertAllPass(t, rec.History(), true)
	if r.LostUpdates.Final != workers*rounds || r.Acquires.Availability != 1 {
		t.Errorf("final %d availability %v", r.LostUpdates.Final, r.Acquires.Availability)
	}
}

// The same workers with a "lock" that excludes nothing: the checker must
// catch it. Goroutine scheduling decides how much breaks, so this asserts
// only that the checks agree with each other.
func TestConcurrentBrokenLockIsCaught(t *testing.T) {
	rec := history.NewRecorder(history.NewClock())
	ctr := resource.NewUnfenced(rec)
	const workers, rounds = 6, 150
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			for range rounds {
				a := rec.Acquire(w)
				a.Acquired(0, 0)
				v := ctr.Read(w, a.ID())
				time.Sleep(10 * time.Microsecond) // "work": let others in
				_ = ctr.Write(w, a.ID(), v+1, 0)
				rec.Release(w, a.ID()).Ok()
			}
		})
	}
	close(start)
	wg.Wait()
	r := Check(rec.History(), WithTimeout(5*time.Second))
	if r.MutualExclusion.Verdict != Violated {
		t.Fatalf("mutual exclusion = %v with no lock at all", r.MutualExclusion)
	}
	// Increments missing from the counter imply lost updates.
	if r.LostUpdates.Deficit != 0 && r.LostUpdates.Count == 0 {
		t.Errorf("deficit %d without a lost update", r.LostUpdates.Deficit)
	}
	if r.Register.Verdict == Violated {
		t.Errorf("the in-process register itself is not linearizable: %v", r.Register)
	}
}

// Arbitrary histories: Check must not panic, and its results must be
// self-consistent.
func FuzzCheckArbitrary(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("acquire read write release nemesis"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kinds := []history.Kind{history.Acquire, history.Read, history.Write, history.Release, history.Extend, history.NemesisStart, history.NemesisEnd}
		outcomes := []history.Outcome{history.Ok, history.Ok, history.Fail, history.Unknown}
		var ops []history.Op
		var acquires = map[int][]history.OpID{}
		for i := 0; i+4 <= len(data) && len(ops) < 60; i += 4 {
			k := kinds[int(data[i])%len(kinds)]
			o := history.Op{ID: history.OpID(len(ops) + 1), Kind: k, Worker: int(data[i+1]) % 4, Outcome: outcomes[int(data[i+2])%len(outcomes)]}
			o.Invoke = time.Duration(data[i+1]) * time.Millisecond
			o.Complete = o.Invoke + time.Duration(data[i+3])*time.Microsecond + 1
			o.Value = int64(data[i+3] % 8)
			o.Token = uint64(data[i+2] % 5)
			o.ValidUntil = time.Duration(data[i+3]) * time.Millisecond
			if k == history.NemesisStart || k == history.NemesisEnd {
				o.Worker, o.Name = history.Nemesis, fmt.Sprint("f", data[i+3]%2)
			} else if as := acquires[o.Worker]; len(as) > 0 && k != history.Acquire && data[i+3]%2 == 0 {
				o.Lease = as[len(as)-1]
			}
			if k == history.Acquire {
				acquires[o.Worker] = append(acquires[o.Worker], o.ID)
			}
			ops = append(ops, o)
		}
		h := history.History{Ops: ops}
		if h.Validate() != nil {
			return
		}
		r := Check(h, WithTimeout(time.Second), WithMaxExamples(3))
		for name, res := range results(r) {
			if res.Count < 0 || len(res.Examples) > 3 {
				t.Fatalf("%s: %+v", name, res)
			}
			if name != "stale_rejected" && (res.Verdict == Violated) != (res.Count > 0) {
				t.Fatalf("%s: verdict %s with count %d", name, res.Verdict, res.Count)
			}
		}
		if a := r.Acquires.Availability; a < 0 || a > 1 {
			t.Fatalf("availability %v", a)
		}
		if r.Latency.P50 > r.Latency.P99 {
			t.Fatalf("p50 %v > p99 %v", r.Latency.P50, r.Latency.P99)
		}
	})
}

// kleppmannPause is Kleppmann's figure, recorded through the real Recorder
// and resource: client 0 acquires (token 33), reads, is paused past its
// lease; client 1 acquires (token 34), increments, releases; client 0 wakes
// and writes its stale increment. The nemesis brackets the pause.
func kleppmannPause(fenced bool) history.History {
	clk := history.NewManualClock(0)
	rec := history.NewRecorder(clk)
	ctr := resource.NewUnfenced(rec)
	if fenced {
		ctr = resource.NewFenced(rec)
	}
	rec.SetMeta("scenario", "kleppmann-pause")
	rec.SetMeta("resource", ctr.String())
	const ttl = 10 * time.Millisecond
	for i := range 3 { // warm-up: three clean increments
		w := i % 2
		clk.Advance(time.Millisecond)
		a := rec.Acquire(w)
		clk.Advance(time.Millisecond)
		a.Acquired(uint64(30+i), clk.Now()+ttl)
		v := ctr.Read(w, a.ID())
		_ = ctr.Write(w, a.ID(), v+1, uint64(30+i))
		rec.Release(w, a.ID()).Ok()
	}
	clk.Advance(time.Millisecond)
	a := rec.Acquire(0)
	clk.Advance(time.Millisecond)
	a.Acquired(33, clk.Now()+ttl)
	v0 := ctr.Read(0, a.ID())
	rec.NemesisStart("pause client 0").Ok()
	clk.Advance(ttl + 5*time.Millisecond) // the lease expires during the pause
	b := rec.Acquire(1)
	clk.Advance(time.Millisecond)
	b.Acquired(34, clk.Now()+ttl)
	v1 := ctr.Read(1, b.ID())
	_ = ctr.Write(1, b.ID(), v1+1, 34)
	rec.Release(1, b.ID()).Ok()
	clk.Advance(2 * time.Millisecond)
	rec.NemesisEnd("pause client 0").Ok()
	_ = ctr.Write(0, a.ID(), v0+1, 33) // the stale increment
	rec.Release(0, a.ID()).Ok()
	return rec.History()
}

// Histories kept under testdata/ are regression inputs: loaded, checked,
// and the counts pinned. Regenerate with go test -run TestRegressionHistories -update.
func TestRegressionHistories(t *testing.T) {
	tests := []struct {
		file   string
		gen    func() history.History
		want   map[string]expect
		faults int
	}{
		{
			file: "kleppmann-pause-unfenced.json",
			gen:  func() history.History { return kleppmannPause(false) },
			want: map[string]expect{
				"mutual_exclusion": {Violated, 1}, "stale_accepted": {Violated, 1},
				"lost_updates": {Violated, 1}, "critical_sections": {Violated, 1},
			},
			faults: 1,
		},
		{
			file:   "kleppmann-pause-fenced.json",
			gen:    func() history.History { return kleppmannPause(true) },
			want:   map[string]expect{"mutual_exclusion": {Violated, 1}, "stale_rejected": {Ok, 1}},
			faults: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			if *update {
				if err := tt.gen().Save(path); err != nil {
					t.Fatal(err)
				}
			}
			h, err := history.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			// The generator still produces exactly the stored history.
			if gen := tt.gen(); !reflect.DeepEqual(gen, h) {
				t.Errorf("%s is out of date with its generator; rerun with -update", path)
			}
			r := Check(h)
			assertChecks(t, r, tt.want)
			if r.Faults != tt.faults || r.LostUpdates.Accepted == 0 {
				t.Errorf("faults %d, accepted %d", r.Faults, r.LostUpdates.Accepted)
			}
		})
	}
}
