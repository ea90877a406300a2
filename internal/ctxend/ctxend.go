// Package ctxend tells whether a context has ended, counting a deadline
// that has come as ended even before the context's own timer has
// cancelled it.
//
// A goroutine whose timer fires at the instant of its context's deadline
// may run before the context's timer has closed Done, or after it, and a
// select that then finds both ready picks one at random. Code that acts
// after such a wait asks Ended, so that it gives up at the deadline
// whichever timer ran first (and a simulation in virtual time, where the
// two fire at one instant, replays the same run).
package ctxend

import (
	"context"
	"time"
)

// Ended reports whether ctx is cancelled or its deadline has come.
func Ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// Err is ctx's error, or context.DeadlineExceeded when its deadline has
// come and its timer has not cancelled it yet; nil while it has not ended.
func Err(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if Ended(ctx) {
		return context.DeadlineExceeded
	}
	return nil
}
