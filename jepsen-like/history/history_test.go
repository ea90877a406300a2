package history

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMonotonicClockStrictlyIncreasing(t *testing.T) {
	c := NewClock()
	const goroutines, each = 4, 2000
	var wg sync.WaitGroup
	results := make([][]time.Duration, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				results[g] = append(results[g], c.Now())
			}
		})
	}
	wg.Wait()
	seen := map[time.Duration]bool{}
	for g, rs := range results {
		for i, v := range rs {
			if i > 0 && v <= rs[i-1] {
				t.Fatalf("goroutine %d: stamp %d (%v) not after %v", g, i, v, rs[i-1])
			}
			if seen[v] {
				t.Fatalf("stamp %v returned twice", v)
			}
			seen[v] = true
		}
	}
}

func TestMonotonicClockAt(t *testing.T) {
	c := NewClock()
	if got := c.At(time.Time{}); got != 0 {
		t.Errorf("At(zero) = %v, want 0", got)
	}
	deadline := c.Start().Add(3 * time.Second)
	if got := c.At(deadline); got != 3*time.Second {
		t.Errorf("At(start+3s) = %v, want 3s", got)
	}
}

func TestManualClock(t *testing.T) {
	c := NewManualClock(10)
	if a, b := c.Now(), c.Now(); a != 10 || b != 11 {
		t.Fatalf("Now, Now = %v, %v; want 10ns, 11ns", a, b)
	}
	c.Advance(time.Millisecond)
	if got := c.Now(); got != 12+time.Millisecond {
		t.Fatalf("after Advance: %v", got)
	}
	c.Set(5) // backwards: ignored
	if got := c.Now(); got <= time.Millisecond {
		t.Fatalf("Set moved the clock backwards to %v", got)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	rec := NewRecorder(NewClock())
	const workers, rounds = 6, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				a := rec.Acquire(w)
				a.Acquired(uint64(i+1), 0)
				r := rec.Invoke(Op{Worker: w, Kind: Read, Lease: a.ID()})
				r.ReadValue(int64(i))
				rec.Release(w, a.ID()).Ok()
			}
		})
	}
	wg.Wait()
	h := rec.History()
	if got, want := len(h.Ops), workers*rounds*3; got != want {
		t.Fatalf("len(ops) = %d, want %d", got, want)
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	for i, o := range h.Ops {
		if o.ID != OpID(i+1) {
			t.Fatalf("op %d has id %d", i, o.ID)
		}
		if i > 0 && o.Invoke <= h.Ops[i-1].Invoke {
			t.Fatalf("ids do not follow invoke order at #%d", o.ID)
		}
		if o.Outcome != Ok || o.Complete <= o.Invoke {
			t.Fatalf("bad completion: %v", o)
		}
	}
}

func TestRecorderCompletion(t *testing.T) {
	clk := NewManualClock(0)
	rec := NewRecorder(clk)
	rec.SetMeta("mode", "single")

	a := rec.Acquire(1)
	clk.Advance(time.Millisecond)
	a.Acquired(7, 50*time.Millisecond)
	a.Fail(errors.New("late")) // second completion: ignored, reported

	ext := rec.Extend(1, a.ID())
	ext.Extended(90 * time.Millisecond)
	timeout := rec.Acquire(2)
	timeout.Unknown(errors.New("i/o timeout"))
	pending := rec.Release(1, a.ID()) // never completed
	n := rec.NemesisStart("partition n1")
	n.Ok()

	h := rec.History()
	if h.Meta["mode"] != "single" {
		t.Errorf("meta = %v", h.Meta)
	}
	got, _ := h.Op(a.ID())
	if got.Outcome != Ok || got.Token != 7 || got.ValidUntil != 50*time.Millisecond || got.Error != "" {
		t.Errorf("acquire = %v (error %q)", got, got.Error)
	}
	if got.Invoke == 0 {
		t.Errorf("invoke stamped 0, which means 'never returned' for Complete; recorder must avoid it")
	}
	if got.Duration() != time.Millisecond { // invoke at 1 ns (0 is bumped), complete at 1 ms + 1 ns
		t.Errorf("duration = %v", got.Duration())
	}
	if e, _ := h.Op(ext.ID()); e.ValidUntil != 90*time.Millisecond || e.Lease != a.ID() {
		t.Errorf("extend = %v", e)
	}
	if u, _ := h.Op(timeout.ID()); u.Outcome != Unknown || u.Error != "i/o timeout" || !u.Returned() {
		t.Errorf("timeout = %v", u)
	}
	if p, _ := h.Op(pending.ID()); p.Outcome != Unknown || p.Returned() {
		t.Errorf("pending = %v", p)
	}
	if nm, _ := h.Op(n.ID()); nm.Worker != Nemesis || nm.Name != "partition n1" {
		t.Errorf("nemesis = %v", nm)
	}
	if err := rec.Err(); !errors.Is(err, ErrCompleted) {
		t.Errorf("Err() = %v, want ErrCompleted", err)
	}
	if err := h.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	// History is a copy: later recording does not change it.
	rec.Acquire(3)
	if len(h.Ops) != 5 {
		t.Errorf("snapshot changed: %d ops", len(h.Ops))
	}
}

func TestValidate(t *testing.T) {
	acq := Op{ID: 1, Worker: 0, Kind: Acquire, Invoke: 1, Complete: 2, Outcome: Ok}
	tests := []struct {
		name string
		ops  []Op
		want string // substring of the error; "" = valid
	}{
		{"valid", []Op{acq, {ID: 2, Worker: 0, Kind: Release, Invoke: 3, Complete: 4, Outcome: Ok, Lease: 1}}, ""},
		{"zero id", []Op{{ID: 0, Kind: Read, Invoke: 1, Complete: 2, Outcome: Ok}}, "id must be"},
		{"duplicate id", []Op{acq, acq}, "duplicate id"},
		{"bad kind", []Op{{ID: 1, Kind: "lock", Invoke: 1, Complete: 2, Outcome: Ok}}, "unknown kind"},
		{"bad outcome", []Op{{ID: 1, Kind: Read, Invoke: 1, Complete: 2, Outcome: "info"}}, "unknown outcome"},
		{"complete before invoke", []Op{{ID: 1, Kind: Read, Invoke: 5, Complete: 2, Outcome: Ok}}, "before it is invoked"},
		{"ok without return", []Op{{ID: 1, Kind: Read, Invoke: 5, Outcome: Ok}}, "never returned"},
		{"nemesis without name", []Op{{ID: 1, Worker: Nemesis, Kind: NemesisStart, Invoke: 1, Complete: 2, Outcome: Ok}}, "without a name"},
		{"nemesis on a worker", []Op{{ID: 1, Worker: 3, Kind: NemesisEnd, Name: "x", Invoke: 1, Complete: 2, Outcome: Ok}}, "nemesis events and only they"},
		{"dangling lease", []Op{{ID: 1, Kind: Release, Invoke: 1, Complete: 2, Outcome: Ok, Lease: 9}}, "not in the history"},
		{"lease not an acquire", []Op{acq, {ID: 2, Kind: Read, Invoke: 3, Complete: 4, Outcome: Ok, Lease: 2}}, "not an acquire"},
		{"lease of another worker", []Op{acq, {ID: 2, Worker: 1, Kind: Read, Invoke: 3, Complete: 4, Outcome: Ok, Lease: 1}}, "belongs to worker 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := History{Ops: tt.ops}.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want ErrInvalid containing %q", err, tt.want)
			}
		})
	}
}

func TestJSONRoundTrip(t *testing.T) {
	clk := NewManualClock(time.Microsecond)
	rec := NewRecorder(clk)
	rec.SetMeta("scenario", "pause")
	a := rec.Acquire(0)
	a.Acquired(3, 40*time.Millisecond)
	w := rec.Invoke(Op{Worker: 0, Kind: Write, Lease: a.ID(), Value: 1, Token: 3})
	w.Fail(errors.New("stale token"))
	rec.NemesisStart("pause client 0").Ok()
	rec.Release(0, a.ID()) // left pending
	h := rec.History()

	var buf bytes.Buffer
	if err := h.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"version": 1`, `"invoke_ns"`, `"complete_ns"`, `"valid_until_ns"`, `"outcome": "fail"`, `"kind": "nemesis-start"`} {
		if !strings.Contains(buf.String(), field) {
			t.Errorf("JSON lacks %s:\n%s", field, buf.String())
		}
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("round trip changed the history:\n got %+v\nwant %+v", got, h)
	}

	path := filepath.Join(t.TempDir(), "h.json")
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(path); err != nil || !reflect.DeepEqual(got, h) {
		t.Fatalf("Load = %+v, %v", got, err)
	}
}

func TestReadJSONRejects(t *testing.T) {
	tests := []struct{ name, in string }{
		{"version", `{"version":2,"ops":[]}`},
		{"unknown field", `{"version":1,"ops":[],"extra":1}`},
		{"invalid op", `{"version":1,"ops":[{"id":1,"kind":"read","outcome":"ok","invoke_ns":5,"complete_ns":1}]}`},
		{"not json", `ops:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ReadJSON(strings.NewReader(tt.in)); err == nil {
				t.Fatal("ReadJSON accepted bad input")
			}
		})
	}
}

func TestHistoryHelpers(t *testing.T) {
	h := History{Ops: []Op{
		{ID: 1, Worker: 2, Kind: Acquire, Invoke: 1, Complete: 9, Outcome: Ok},
		{ID: 2, Worker: Nemesis, Kind: NemesisStart, Name: "x", Invoke: 3, Complete: 4, Outcome: Ok},
		{ID: 3, Worker: 0, Kind: Acquire, Invoke: 5, Outcome: Unknown},
	}}
	if got := h.End(); got != 9 {
		t.Errorf("End = %v, want 9ns", got)
	}
	if got := h.Workers(); !reflect.DeepEqual(got, []int{0, 2}) {
		t.Errorf("Workers = %v", got)
	}
	if _, ok := h.Op(4); ok {
		t.Error("Op(4) found")
	}
	if o, ok := h.Op(2); !ok || o.Name != "x" {
		t.Errorf("Op(2) = %v, %v", o, ok)
	}
}

// An Observe delivery spans from when its read may have begun to now; a
// start not before now (or none) leaves an instant.
func TestObserved(t *testing.T) {
	clk := NewManualClock(100 * time.Millisecond)
	rec := NewRecorder(clk)
	rec.Observed(2, 7, "v2", 40*time.Millisecond)
	rec.Observed(2, 7, "v3", 0)
	rec.Observed(2, 7, "v4", time.Second)
	h := rec.History()
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		invoke time.Duration
		text   string
	}{{40 * time.Millisecond, "v2"}, {h.Ops[1].Complete - 1, "v3"}, {h.Ops[2].Complete - 1, "v4"}}
	for i, o := range h.Ops {
		if o.Kind != Observe || o.Outcome != Ok || o.Token != 7 || o.Text != want[i].text || o.Invoke != want[i].invoke || o.Complete < 100*time.Millisecond {
			t.Errorf("op %d = %v, want an Ok observe of %q from %v", i, o, want[i].text, want[i].invoke)
		}
	}
}
