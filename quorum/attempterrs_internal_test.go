package quorum

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/quorumlock/quorumlock/multilock"
)

// The last attempt of a Lock that runs out of time is often cut before the
// nodes could answer; the error keeps what earlier attempts learnt.
func TestAttemptErrsKeepsTheMostInformative(t *testing.T) {
	refused := &NodeError{Node: "b:2", Err: syscall.ECONNREFUSED}
	held := &NodeError{Node: "a:1", Err: multilock.ErrTaken}
	var a attemptErrs
	a.add(errors.Join(ErrNotObtained, held, refused))
	a.add(errors.Join(ErrNotObtained,
		&NodeError{Node: "a:1", Err: multilock.ErrNoAnswer},
		&NodeError{Node: "b:2", Err: context.DeadlineExceeded},
		&NodeError{Node: "c:3", Err: multilock.ErrNoAnswer}, context.DeadlineExceeded))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := a.final(ctx, errors.New("last"))
	for _, want := range []error{ErrNotObtained, syscall.ECONNREFUSED, multilock.ErrTaken, multilock.ErrNoAnswer, context.Canceled} {
		if !errors.Is(err, want) {
			t.Errorf("final error lacks %v: %v", want, err)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a node's deadline replaced a better error: %v", err)
	}
}
