package checker_test

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// Two workers hold the lock at once (worker 2 acquires before worker 1
// releases): the checker counts one overlapping pair of tenures.
func ExampleCheck() {
	clk := history.NewManualClock(0)
	rec := history.NewRecorder(clk)
	step := func() { clk.Advance(time.Millisecond) }

	a := rec.Acquire(1)
	step()
	a.Acquired(1, 0)
	step()
	b := rec.Acquire(2)
	step()
	b.Acquired(2, 0)
	step()
	rec.Release(1, a.ID()).Ok()
	step()
	rec.Release(2, b.ID()).Ok()

	r := checker.Check(rec.History(), checker.WithoutLinearizability())
	fmt.Println("acquisitions:", r.Acquires.Ok, "of", r.Acquires.Attempted)
	fmt.Println("mutual exclusion:", r.MutualExclusion.Verdict, r.MutualExclusion.Count)
	fmt.Println("token order:", r.TokenOrder.Verdict)
	// Output:
	// acquisitions: 2 of 2
	// mutual exclusion: violated 1
	// token order: ok
}
