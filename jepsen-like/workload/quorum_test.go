package workload

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// The quorum adapter hands out the lease's token and deadline, and maps
// "not obtained" to ErrNotObtained.
func TestQuorumAdapter(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	rc := s.Client()
	t.Cleanup(func() { _ = rc.Close() })
	qc, err := quorum.New([]redis.UniversalClient{rc}, quorum.WithFencing(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qc.Close() })
	m, err := qc.Mutex("workload-adapter", quorum.WithLeaseTime(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	l := Quorum(m)
	ctx := t.Context()
	le, err := l.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if le.Token() <= 0 {
		t.Errorf("token %d with fencing, want > 0", le.Token())
	}
	if left := time.Until(le.Until()); left <= 0 || left > 2*time.Second {
		t.Errorf("validity left %v, want in (0, 2s]", left)
	}
	if _, err := l.TryLock(ctx); !errors.Is(err, ErrNotObtained) || !errors.Is(err, quorum.ErrNotObtained) {
		t.Errorf("second TryLock: %v, want ErrNotObtained (both)", err)
	}
	if err := le.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	le2, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if le2.Token() <= le.Token() {
		t.Errorf("tokens %d then %d, want increasing", le.Token(), le2.Token())
	}
	if err := le2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
