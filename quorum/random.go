package quorum

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/seeded"
)

func init() { seeded.Random = func(src rand.Source) any { return withRandom(src) } }

// withRandom sets the source of the client's random choices: its id (the
// prefix of every owner it makes) and the jitter of its retries and
// back-offs. Default: crypto/rand for the id and math/rand/v2's global
// generator for the jitter. The simulation, which must replay a run from
// a seed, gives each client its own seeded source (internal/seeded). Two
// clients given equal sources make equal owners, and then each takes the
// other's lock for its own: never share a seed between clients of one
// lock.
func withRandom(src rand.Source) Option {
	return func(c *config) {
		c.onlyClient("withRandom")
		if src == nil {
			c.random = nil
			return
		}
		c.random = &lockedRand{r: rand.New(src)}
	}
}

// lockedRand is a seeded generator the client's goroutines share.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// n is a random duration in [0, d).
func (l *lockedRand) n(d time.Duration) time.Duration {
	if l == nil {
		return rand.N(d)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Duration(l.r.Int64N(int64(d)))
}

// read fills b.
func (l *lockedRand) read(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range b {
		b[i] = byte(l.r.Uint64())
	}
}

// jitter is d ± 20 %, drawn from the client's source.
func (c *Client) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d*8/10 + c.cfg.random.n(d*4/10+1)
}

// splitBackoff is the pause after a split vote, drawn from the client's
// source.
func (c *Client) splitBackoff() time.Duration {
	return 500*time.Microsecond + c.cfg.random.n(5*time.Millisecond)
}
