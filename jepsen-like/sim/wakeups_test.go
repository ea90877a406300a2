package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/quorum"
)

// Lost and late unlock messages: the quorum lock's waiters still take a
// free lock within the wakeup bound; a lock whose waiters rely on the
// messages (a 2 s retry interval) fails the same cells.
func TestLostWakeups(t *testing.T) {
	for _, id := range []string{"single", "redlock-3"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			c := CellRun{Mode: mode(t, id), Scenario: "lost-wakeups", Seed: 3, Timing: Timing{Duration: 10 * time.Second}}
			v := Run(t, c)
			t.Log(v)
			if v.Bug() || v.Report.Wakeups.Verdict != checker.Ok || v.Result.Property != string(checker.FreeLockTaken) {
				t.Errorf("quorum lock: %v (wakeups %v)", v, v.Report.Wakeups)
			}
			slow := c.Mode
			slow.ID += "+slow-retry"
			slow.Lock = catalog.QuorumLock(append(catalog.SafetyOptions(slow), quorum.WithRetryInterval(2*time.Second))...)
			c.Mode = slow
			bad := Run(t, c)
			t.Log(bad)
			if !bad.Bug() || bad.Report.Wakeups.Verdict != checker.Violated || !strings.Contains(bad.Result.VerdictNote, "free locks left untaken") {
				t.Errorf("a lock that waits for the messages passes: %v (wakeups %v)", bad, bad.Report.Wakeups)
			}
		})
	}
}
