package resource

import (
	"errors"
	"sync"
	"testing"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

func TestWriteFencing(t *testing.T) {
	type write struct {
		token  uint64
		accept bool
	}
	tests := []struct {
		name   string
		fenced bool
		writes []write
	}{
		{"unfenced accepts lower tokens", false, []write{{5, true}, {3, true}, {0, true}, {9, true}}},
		{"fenced increasing", true, []write{{1, true}, {2, true}, {7, true}}},
		{"fenced rejects lower", true, []write{{5, true}, {3, false}, {6, true}, {5, false}}},
		{"fenced accepts equal (same holder writes twice)", true, []write{{4, true}, {4, true}}},
		{"fenced: tokenless before any token", true, []write{{0, true}, {0, true}}},
		{"fenced: tokenless after a token", true, []write{{2, true}, {0, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := history.NewRecorder(history.NewManualClock(0))
			c := NewUnfenced(rec)
			if tt.fenced {
				c = NewFenced(rec)
			}
			var wantValue int64
			var wantAcc, wantRej int
			for i, w := range tt.writes {
				v := int64(i + 1)
				err := c.Write(1, 0, v, w.token)
				if w.accept {
					if err != nil {
						t.Fatalf("write %d (token %d): %v, want accepted", i, w.token, err)
					}
					wantValue = v
					wantAcc++
				} else {
					var se *StaleTokenError
					if !errors.Is(err, ErrStaleToken) || !errors.As(err, &se) || se.Token != w.token {
						t.Fatalf("write %d (token %d): %v, want *StaleTokenError", i, w.token, err)
					}
					wantRej++
				}
				if got := c.Read(1, 0); got != wantValue {
					t.Fatalf("after write %d: read %d, want %d", i, got, wantValue)
				}
			}
			if acc, rej := c.Counts(); acc != wantAcc || rej != wantRej {
				t.Errorf("Counts = %d, %d; want %d, %d", acc, rej, wantAcc, wantRej)
			}
			// The history says the same as the return values.
			var acc, rej int
			for _, o := range rec.History().Ops {
				switch {
				case o.Accepted():
					acc++
				case o.Rejected():
					rej++
					if o.Error == "" {
						t.Errorf("rejected write %v has no error text", o)
					}
				}
			}
			if acc != wantAcc || rej != wantRej {
				t.Errorf("history: %d accepted, %d rejected; want %d, %d", acc, rej, wantAcc, wantRej)
			}
		})
	}
}

// The resource's operations must be disjoint in time and recorded in the
// order it applied them, whatever the concurrency: the checker relies on it.
func TestConcurrentStampsAreSerial(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		rec := history.NewRecorder(history.NewClock())
		c := NewUnfenced(rec)
		if fenced {
			c = NewFenced(rec)
		}
		t.Run(c.String(), func(t *testing.T) {
			const workers, rounds = 8, 300
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := range rounds {
						v := c.Read(w, 0)
						_ = c.Write(w, 0, v+1, uint64(i))
					}
				})
			}
			wg.Wait()
			h := rec.History()
			if err := h.Validate(); err != nil {
				t.Fatal(err)
			}
			if len(h.Ops) != 2*workers*rounds {
				t.Fatalf("%d ops recorded, want %d", len(h.Ops), 2*workers*rounds)
			}
			var value int64
			for i, o := range h.Ops {
				if i > 0 && o.Invoke <= h.Ops[i-1].Complete {
					t.Fatalf("op %v overlaps previous %v", o, h.Ops[i-1])
				}
				// Replaying in id order reproduces every read.
				switch {
				case o.Kind == history.Read && o.Value != value:
					t.Fatalf("replay: %v read %d, replayed value %d", o, o.Value, value)
				case o.Accepted():
					value = o.Value
				}
			}
			if c.Value() != value {
				t.Fatalf("Value() = %d, replay = %d", c.Value(), value)
			}
		})
	}
}

// A fenced counter learns tokens from reads too: a stale holder's write
// that lands between a newer holder's read and its write is rejected (it
// would otherwise be overwritten: a lost update behind the fence). An
// unfenced counter accepts it.
func TestReadFencesOlderWrites(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		rec := history.NewRecorder(history.NewManualClock(0))
		c := NewUnfenced(rec)
		if fenced {
			c = NewFenced(rec)
		}
		old := c.ReadToken(1, 0, 5) // the holder that will be paused
		v := c.ReadToken(2, 0, 6)   // the next holder reads...
		err := c.Write(1, 0, old+1, 5)
		if fenced != errors.Is(err, ErrStaleToken) {
			t.Errorf("fenced %v: the stale write after a newer read: %v", fenced, err)
		}
		if err := c.Write(2, 0, v+1, 6); err != nil {
			t.Errorf("fenced %v: the newer holder's write: %v", fenced, err)
		}
		if fenced && c.Highest() != 6 {
			t.Errorf("highest %d, want 6", c.Highest())
		}
	}
}
