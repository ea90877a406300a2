package quorum

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// BenchmarkHandoffFair is the forced hand-off (8 goroutines on one name; the
// releaser sits out until another goroutine acquired) on FairMutex next to
// Mutex, on the same five nodes in the same run: the goroutines on one
// client, and spread over three clients with their own connections (where
// a plain pub/sub wake-up favours whoever subscribed first). Metrics: acq/s,
// gap-p50-ms (from the releaser's Unlock call to the next acquisition),
// min-acq and max-acq (acquisitions of the least and most served goroutine)
// min/max (their ratio) and calls/acq (script and pub/sub calls the five
// servers got per acquisition: the work, which machine load does not blur).
//
//	go test -run '^$' -bench 'HandoffFair' -benchtime 400x ./quorum/
func BenchmarkHandoffFair(b *testing.B) {
	servers, _ := testutil.Servers(b, 5, localredis.Config{})
	for _, clients := range []int{1, 3} {
		for _, kind := range []string{"mutex", "fair"} {
			b.Run(fmt.Sprintf("N=5/clients=%d/%s", clients, kind), func(b *testing.B) {
				ls := make([]handoffLocker, clients)
				for i := range ls {
					c, err := New(testutil.Clients(b, servers, nil))
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = c.Close() })
					name := fmt.Sprintf("handoff-%s-%d", kind, clients)
					if kind == "fair" {
						ls[i], err = c.FairMutex(name)
					} else {
						ls[i], err = c.Mutex(name)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				before := fairCommands(b, servers)
				b.ResetTimer()
				r := HandoffOn(context.Background(), ls, 8, max(b.N, 16))
				b.StopTimer()
				calls := fairCommands(b, servers) - before
				if r.Err != nil {
					b.Fatal(r.Err)
				}
				b.ReportMetric(r.PerSecond, "acq/s")
				b.ReportMetric(float64(r.MedianGap.Microseconds())/1000, "gap-p50-ms")
				b.ReportMetric(float64(slices.Min(r.PerWorker)), "min-acq")
				b.ReportMetric(float64(slices.Max(r.PerWorker)), "max-acq")
				b.ReportMetric(r.MinMax, "min/max")
				b.ReportMetric(float64(calls)/float64(r.Acquisitions), "calls/acq")
			})
		}
	}
}

// fairCommands is how many calls clients made to the servers (scripts and
// pub/sub commands; not the commands scripts run inside).
func fairCommands(b *testing.B, servers []*localredis.Server) int64 {
	var total int64
	for _, s := range servers {
		c := s.Client()
		info, err := c.Info(context.Background(), "commandstats").Result()
		c.Close()
		if err != nil {
			b.Fatal(err)
		}
		f := node.ParseInfo(info)
		for _, cmd := range []string{"evalsha", "eval", "subscribe", "unsubscribe"} {
			// cmdstat_evalsha:calls=123,usec=...
			v, _, _ := strings.Cut(strings.TrimPrefix(f["cmdstat_"+cmd], "calls="), ",")
			n, _ := strconv.ParseInt(v, 10, 64)
			total += n
		}
	}
	return total
}
