package resource_test

import (
	"errors"
	"fmt"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
)

// A fenced counter refuses a write whose token is below one it already
// accepted: the old holder's late write is rejected, not lost.
func ExampleNewFenced() {
	rec := history.NewRecorder(history.NewManualClock(0))
	c := resource.NewFenced(rec)

	fmt.Println(c.Write(2, 0, 1, 8)) // the new holder, token 8
	err := c.Write(1, 0, 1, 7)       // the old holder, token 7, too late
	fmt.Println(errors.Is(err, resource.ErrStaleToken))
	accepted, rejected := c.Counts()
	fmt.Println(c.Value(), accepted, rejected)
	// Output:
	// <nil>
	// true
	// 1 1 1
}
