package history_test

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// A Recorder stamps every call at its invocation and its completion on one
// clock (here a manual one, so the output is fixed).
func ExampleRecorder() {
	clk := history.NewManualClock(0)
	rec := history.NewRecorder(clk)

	acq := rec.Acquire(1)
	clk.Advance(2 * time.Millisecond)
	acq.Acquired(7, 100*time.Millisecond) // token 7, valid until 100 ms
	clk.Advance(10 * time.Millisecond)
	rec.Release(1, acq.ID()).Ok()

	h := rec.History()
	for _, op := range h.Ops {
		fmt.Println(op.Worker, op.Kind, op.Outcome, op.Token, op.Lease == acq.ID() || op.Kind == history.Acquire)
	}
	fmt.Println("errors:", rec.Err())
	// Output:
	// 1 acquire ok 7 true
	// 1 release ok 0 true
	// errors: <nil>
}
