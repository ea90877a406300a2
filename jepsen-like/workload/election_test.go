package workload

import (
	"errors"
	"fmt"
	"testing"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/quorum"
)

// A Proclaim that returned nil is published; one whose error does not
// say that nothing was published may show later (never a definite Fail).
func TestProclaimOutcome(t *testing.T) {
	if o := ProclaimOutcome(nil); o != history.Ok {
		t.Errorf("nil: %s, want ok", o)
	}
	if o := ProclaimOutcome(errors.New("quorumlock: election \"e\": value not published: 1 of 3 nodes took it, 2 needed")); o != history.Unknown {
		t.Errorf("an error that wraps no sentinel: %s, want unknown", o)
	}
	if o := ProclaimOutcome(fmt.Errorf("x: %w", quorum.ErrNotPublished)); o != history.Fail {
		t.Errorf("ErrNotPublished: %s, want fail (no reader may see it)", o)
	}
	if o := ProclaimOutcome(fmt.Errorf("x: %w", quorum.ErrPublishUnfinished)); o != history.Unknown {
		t.Errorf("ErrPublishUnfinished: %s, want unknown", o)
	}
	if a, b := ProclaimValue(1, 7, 2), ProclaimValue(1, 7, 3); a == b || a == ProclaimValue(2, 7, 2) || a == ProclaimValue(1, 8, 2) {
		t.Errorf("proclaimed values are not distinct: %q %q", a, b)
	}
}
