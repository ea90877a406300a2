package ctxend

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if Ended(ctx) || Err(ctx) != nil {
			t.Fatalf("a context before its deadline: Ended %v, Err %v", Ended(ctx), Err(ctx))
		}
		// A timer due at the deadline: its goroutine may run before the
		// context's own timer cancels it.
		tm := time.NewTimer(time.Second)
		<-tm.C
		if !Ended(ctx) || !errors.Is(Err(ctx), context.DeadlineExceeded) {
			t.Fatalf("at the deadline: Ended %v, Err %v", Ended(ctx), Err(ctx))
		}
		synctest.Wait()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(Err(ctx), context.DeadlineExceeded) {
			t.Fatalf("after the deadline: ctx.Err %v, Err %v", ctx.Err(), Err(ctx))
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	if Ended(ctx) {
		t.Fatal("a live context without deadline ended")
	}
	cancel()
	if !Ended(ctx) || !errors.Is(Err(ctx), context.Canceled) {
		t.Fatalf("cancelled: Ended %v, Err %v", Ended(ctx), Err(ctx))
	}
}
