package workload_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/quorum"
)

// Three workers, each with its own quorum client over the nodes of
// $QUORUMLOCK_NODES, increment a fenced counter for two seconds; then the
// checker judges the history.
func ExampleRun() {
	rec := history.NewRecorder(history.NewClock())
	counter := resource.NewFenced(rec)
	var workers []workload.Worker
	for w := range 3 {
		qc, err := quorum.FromEnv(quorum.WithFencing(true))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer qc.Close()
		m, err := qc.Mutex("counter", quorum.WithLeaseTime(2*time.Second)) // fixed leases: see the package doc
		if err != nil {
			fmt.Println(err)
			return
		}
		workers = append(workers, workload.Worker{ID: w, Locker: workload.Quorum(m)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := workload.Run(ctx, rec, counter, workers, workload.Config{Seed: 1}); err != nil {
		fmt.Println(err)
		return
	}
	r := checker.Check(rec.History())
	fmt.Println("acquisitions:", r.Acquires.Ok, "overlapping tenures:", r.MutualExclusion.Count, "lost updates:", r.LostUpdates.Count)
}
