package guard

import (
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
)

// slot is Redis Cluster's hash slot of key (CRC16/XMODEM of the hash tag).
func slot(key string) int {
	if i := indexByte(key, '{'); i >= 0 {
		if j := indexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

func TestTokenKeySameSlot(t *testing.T) {
	if slot("123456789") != 12739 {
		t.Fatalf("crc16 self-check: slot(123456789) = %d, want 12739", slot("123456789"))
	}
	// Keys with a "}" but no hash tag (e.g. "we{}ird") cannot be matched:
	// no hash tag can name a string holding "}". TokenKey's doc says so.
	for _, key := range []string{"orders", "user:{42}:profile", "{x}", "a{b", "{x}y{z}"} {
		if a, b := slot(key), slot(TokenKey(key)); a != b {
			t.Errorf("%q in slot %d, its token key %q in slot %d", key, a, TokenKey(key), b)
		}
	}
}

func TestRedisGuard(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	c := s.Client()
	t.Cleanup(func() { _ = c.Close() })
	g := NewRedis(c)
	ctx := t.Context()
	steps := []struct {
		token int64
		value string
		want  error
		last  int64
	}{
		{3, "three", nil, 0},
		{3, "three again", nil, 0}, // the same holder writes again
		{2, "two", ErrStale, 3},    // an older holder is refused
		{7, "seven", nil, 0},
		{5, "five", ErrStale, 7},
	}
	for i, st := range steps {
		err := g.Set(ctx, "res", st.token, st.value, 0)
		if !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Fatalf("step %d: %v, want %v", i, err, st.want)
		}
		var se *StaleError
		if errors.As(err, &se) && se.Last != st.last {
			t.Fatalf("step %d: last %d, want %d", i, se.Last, st.last)
		}
	}
	if v, _ := c.Get(ctx, "res").Result(); v != "seven" {
		t.Fatalf("value %q, want seven", v)
	}
	if last, err := g.Last(ctx, "res"); last != 7 || err != nil {
		t.Fatalf("Last: %d %v", last, err)
	}
	if err := g.Set(ctx, "short", 1, "x", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, "short").Val(); ttl <= 0 || ttl > 50*time.Millisecond {
		t.Fatalf("ttl %v", ttl)
	}
	if err := g.Set(ctx, "res", 0, "no token", 0); err == nil {
		t.Fatal("token 0 (fencing off) accepted")
	}
	// Tokens are 16-digit numbers (a counter starts at the node's clock in
	// microseconds): neighbours must still be told apart, beyond what a
	// float with less than 53 bits would hold.
	big := time.Now().UnixMicro()
	for i, st := range []struct {
		token int64
		want  error
	}{{big, nil}, {big + 1, nil}, {big, ErrStale}, {big + 2, nil}} {
		if err := g.Set(ctx, "big", st.token, "v", 0); !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Fatalf("16-digit step %d (token %d): %v, want %v", i, st.token, err, st.want)
		}
	}
	if last, err := g.Last(ctx, "big"); last != big+2 || err != nil {
		t.Fatalf("Last: %d %v, want %d", last, err, big+2)
	}
}
