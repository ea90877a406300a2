package drift

import (
	"testing"
	"time"
)

func TestValidity(t *testing.T) {
	tests := []struct {
		name    string
		ttl     time.Duration
		elapsed time.Duration
		factor  float64
		want    time.Duration
	}{
		{"fast acquire", 10 * time.Second, 0, 0.01, 10*time.Second - 100*time.Millisecond - 2*time.Millisecond},
		{"slow acquire shortens validity", 10 * time.Second, 3 * time.Second, 0.01, 7*time.Second - 102*time.Millisecond},
		{"acquire slower than ttl", time.Second, 2 * time.Second, 0.01, 0},
		{"acquire eats exactly the rest", time.Second, time.Second - 12*time.Millisecond, 0.01, 0},
		{"negative elapsed counts as zero", time.Second, -time.Second, 0, time.Second - 2*time.Millisecond},
		{"no factor", 100 * time.Millisecond, 10 * time.Millisecond, 0, 88 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Validity(tt.ttl, tt.elapsed, tt.factor); got != tt.want {
				t.Fatalf("Validity(%v, %v, %v) = %v, want %v", tt.ttl, tt.elapsed, tt.factor, got, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		ttl    time.Duration
		factor float64
		ok     bool
	}{
		{10 * time.Second, 0.01, true},
		{0, 0.01, false},
		{-time.Second, 0.01, false},
		{2 * time.Millisecond, 0, false}, // equal to the allowance
		{3 * time.Millisecond, 0, true},
		{time.Second, -0.1, false},
		{time.Second, 1, false},
	}
	for _, tt := range tests {
		err := Check(tt.ttl, tt.factor)
		if (err == nil) != tt.ok {
			t.Errorf("Check(%v, %v) = %v, want ok=%v", tt.ttl, tt.factor, err, tt.ok)
		}
	}
}

func TestFakeClock(t *testing.T) {
	f := NewFake(time.Unix(100, 0))
	t0 := f.Now()
	f.Advance(time.Second)
	f.Advance(-time.Hour)
	if d := f.Now().Sub(t0); d != time.Second {
		t.Fatalf("advanced %v, want 1s", d)
	}
}

// FuzzValidity: 0 ≤ validity ≤ ttl − elapsed, and the allowance is always
// taken off when there is room for it.
func FuzzValidity(f *testing.F) {
	f.Add(int64(10*time.Second), int64(time.Millisecond), 0.01)
	f.Add(int64(time.Millisecond), int64(0), 0.0)
	f.Add(int64(time.Hour), int64(time.Hour), 0.5)
	f.Fuzz(func(t *testing.T, ttl, elapsed int64, factor float64) {
		if ttl <= 0 || ttl > int64(24*time.Hour) || elapsed < 0 || elapsed > int64(48*time.Hour) || !(factor >= 0 && factor < 1) {
			t.Skip()
		}
		v := Validity(time.Duration(ttl), time.Duration(elapsed), factor)
		if v < 0 {
			t.Fatalf("negative validity %v", v)
		}
		if rest := time.Duration(ttl - elapsed); v > rest && v > 0 {
			t.Fatalf("validity %v exceeds ttl−elapsed %v", v, rest)
		}
		if v > 0 && v != time.Duration(ttl-elapsed)-Allowance(time.Duration(ttl), factor) {
			t.Fatalf("validity %v is not ttl−elapsed−allowance", v)
		}
	})
}
