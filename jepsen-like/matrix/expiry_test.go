package matrix

import (
	"testing"

	"github.com/quorumlock/quorumlock/jepsen-like/report"
)

// expiry-race reaches abandoned fast-path keys in their last millisecond,
// and the correct library leaves every one of them to expire: no key
// without a TTL, the workers' lock unaffected.
func TestExpiryRace(t *testing.T) {
	needRedis(t)
	c := findCell(t, "single", "expiry-race")
	res, h, err := RunCell(t.Context(), c, testTiming, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	sum := h.Meta["expiry_race"]
	t.Log(sum)
	if sum == "" {
		t.Fatal("no expiry_race summary in the history's meta: the race did not run")
	}
	if res.KeysWithoutExpiry != 0 || res.Broken != "" || res.Verdict == report.Refuted {
		t.Errorf("%d keys without expiry, broken %q, %s; want 0, none, not refuted", res.KeysWithoutExpiry, res.Broken, res.Verdict)
	}
	e := &expiryRace{}
	if e.summary() == sum {
		t.Errorf("no round ran: %s", sum)
	}
}
