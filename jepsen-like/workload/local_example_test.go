package workload_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// Two workers, each with its own quorum client over three local nodes,
// increment a fenced counter for half a second with no faults; the checker
// finds no overlap and no lost update.
func ExampleQuorum() {
	ctx := context.Background()
	servers, err := localredis.StartN(ctx, 3, localredis.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer localredis.StopAll(servers)
	rec := history.NewRecorder(history.NewClock())
	counter := resource.NewFenced(rec)
	var workers []workload.Worker
	for w := range 2 {
		clients := make([]redis.UniversalClient, len(servers))
		for i, s := range servers {
			rc := s.Client()
			defer rc.Close()
			clients[i] = rc
		}
		qc, err := quorum.New(clients, quorum.WithFencing(true))
		if err != nil {
			log.Fatal(err)
		}
		defer qc.Close()
		m, err := qc.Mutex("counter", quorum.WithLeaseTime(2*time.Second))
		if err != nil {
			log.Fatal(err)
		}
		workers = append(workers, workload.Worker{ID: w, Locker: workload.Quorum(m)})
	}
	rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := workload.Run(rctx, rec, counter, workers, workload.Config{Seed: 1}); err != nil {
		log.Fatal(err)
	}
	r := checker.Check(rec.History(), checker.WithoutLinearizability())
	fmt.Println("some acquisitions:", r.Acquires.Ok > 0)
	fmt.Println("mutual exclusion:", r.MutualExclusion.Verdict)
	fmt.Println("lost updates:", r.LostUpdates.Count)
	// Output:
	// some acquisitions: true
	// mutual exclusion: ok
	// lost updates: 0
}
