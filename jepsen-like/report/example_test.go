package report_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
)

// The whole flow of a workload, with an in-process mutex standing in for
// the lock under test: one clock, one recorder, one resource; workers
// record acquire and release and go through the resource for reads and
// writes; the nemesis records its faults; then check and report.
func Example() {
	clock := history.NewClock()
	rec := history.NewRecorder(clock)
	ctr := resource.NewFenced(rec)

	var mu sync.Mutex // the "lock"
	var token uint64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for range 25 {
				acq := rec.Acquire(w)
				mu.Lock()
				token++
				acq.Acquired(token, clock.Now()+time.Second) // a real lock: clock.At(lease.Until())
				v := ctr.Read(w, acq.ID())
				_ = ctr.Write(w, acq.ID(), v+1, token) // error wraps resource.ErrStaleToken if fenced off
				rec.Release(w, acq.ID()).Ok()
				mu.Unlock()
			}
		})
	}
	fault := rec.NemesisStart("nothing really")
	fault.Ok()
	rec.NemesisEnd("nothing really").Ok()
	wg.Wait()

	h := rec.History()
	rep := checker.Check(h, checker.WithTimeout(10*time.Second))
	row := report.FromReport("mutex", "no-fault", report.ClaimMajority, true, rep).WithTimeline(h)
	fmt.Println(row.Acquisitions, row.Violations, row.LostUpdates, row.StaleAccepted, row.Linearizable, row.Verdict)
	// The matrix: m.WriteJSON, m.WriteMarkdown, m.WriteHTML.
	m := report.Matrix{Seed: 1, Results: []report.Row{row}}
	_ = m
	// Output: 100 0 0 0 ok reproduced
}
