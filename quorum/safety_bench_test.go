package quorum

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// BenchmarkSafetyGate is Lock+Unlock on 3 master + replica groups with no
// safety option, with WithRestartDetection (INFO server in the acquire's
// round trip) and with WithReplicaAck(1) (WAIT in the same round trip), taken in
// turn in the same run. Metrics: ops/s of each and their ratio to plain.
func BenchmarkSafetyGate(b *testing.B) {
	masters := localredis.StartNT(b, 3, localredis.Config{})
	rcs := testutil.Clients(b, masters, nil)
	for _, m := range masters {
		localredis.StartT(b, localredis.Config{ReplicaOf: m.Addr()})
	}
	ctx := context.Background()
	mk := func(opts ...Option) *Mutex {
		c, err := New(rcs, append([]Option{WithTTL(time.Second), WithAttemptTimeout(time.Second), WithRetryInterval(50 * time.Millisecond)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		m, _ := c.Mutex("gate-bench")
		// Until the servers are older than the TTL and the replicas online.
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		l, err := m.Lock(wctx)
		if err != nil {
			b.Fatal(err)
		}
		_ = l.Unlock(ctx)
		return m
	}
	variants := []*Mutex{mk(), mk(WithRestartDetection(true)), mk(WithReplicaAck(1, 100*time.Millisecond))}
	took := make([]time.Duration, len(variants))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, m := range variants {
			start := time.Now()
			l, err := m.Lock(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
			took[k] += time.Since(start)
		}
	}
	b.ReportMetric(float64(b.N)/took[0].Seconds(), "plain-ops/s")
	b.ReportMetric(float64(b.N)/took[1].Seconds(), "restart-ops/s")
	b.ReportMetric(float64(b.N)/took[2].Seconds(), "wait-ops/s")
	b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "x-restart")
	b.ReportMetric(took[0].Seconds()/took[2].Seconds(), "x-wait")
}
