package quorum

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A client given a seeded source makes the same id and the same jitter
// as another given the same seed, and its draws stay within their bounds;
// without one, two clients' ids differ.
func TestSeededRandomReplays(t *testing.T) {
	newClient := func(opts ...Option) *Client {
		t.Helper()
		rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		t.Cleanup(func() { _ = rc.Close() })
		c, err := New([]redis.UniversalClient{rc}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a := newClient(withRandom(rand.NewPCG(7, 1)))
	b := newClient(withRandom(rand.NewPCG(7, 1)))
	other := newClient(withRandom(rand.NewPCG(8, 1)))
	if a.id != b.id || a.id == other.id {
		t.Fatalf("ids %q, %q (same seed), %q (another seed)", a.id, b.id, other.id)
	}
	for range 100 {
		ja, jb := a.jitter(time.Second), b.jitter(time.Second)
		if ja != jb {
			t.Fatalf("jitter %v and %v from one seed", ja, jb)
		}
		if ja < 800*time.Millisecond || ja > 1200*time.Millisecond {
			t.Fatalf("jitter %v outside 1s ± 20 %%", ja)
		}
		if s := a.splitBackoff(); s != b.splitBackoff() || s < 500*time.Microsecond || s >= 5500*time.Microsecond {
			t.Fatalf("split back-off %v", s)
		}
	}
	if x, y := newClient(), newClient(); x.id == y.id {
		t.Fatalf("two clients without a source share the id %q", x.id)
	}
}
