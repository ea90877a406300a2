package matrix

import (
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/quorum"
)

// The loss hook frames RESP and drops only pub/sub messages.
func TestFrameEnd(t *testing.T) {
	msg := ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nx\r\n"
	for _, tc := range []struct {
		in   string
		want int
	}{
		{msg, len(msg)},
		{msg[:10], 0},
		{"+OK\r\n", 5},
		{"%1\r\n+a\r\n:1\r\n", 12},
		{"$-1\r\n", 5},
		{"?x\r\n", -1},
	} {
		if got := frameEnd([]byte(tc.in), 0); got != tc.want {
			t.Errorf("frameEnd(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	if !isMessage([]byte(msg)) || isMessage([]byte(">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n")) {
		t.Error("isMessage")
	}
}

// On real servers, lost and late unlock messages: the quorum lock takes
// the free lock within the bound; with a 2 s retry interval its waiters
// are late, and the cell is refuted.
func TestLostWakeupsMatrix(t *testing.T) {
	needRedis(t)
	c := findCell(t, "redlock-3", "lost-wakeups")
	// The library's attempt timeout: the bound is 1.2 × 100 ms + 250 ms
	// (with testTiming's 750 ms a waiter that sleeps until the key's TTL
	// would be within it). No fault slows the network here.
	tm := testTiming
	tm.AttemptTimeout = 0
	res, _, err := RunCell(t.Context(), c, tm, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.VerdictNote)
	if res.Verdict == report.Refuted || res.Broken != "" {
		t.Errorf("quorum lock: %s: %s (broken: %s)", res.Verdict, res.VerdictNote, res.Broken)
	}
	c.Mode.ID += "+slow-retry"
	c.Mode.Lock = catalog.QuorumLock(append(catalog.SafetyOptions(c.Mode), quorum.WithRetryInterval(2*time.Second))...)
	res, _, err = RunCell(t.Context(), c, tm, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.VerdictNote)
	if res.Verdict != report.Refuted || !strings.Contains(res.VerdictNote, "free locks left untaken") {
		t.Errorf("slow retry: %s: %s", res.Verdict, res.VerdictNote)
	}
}
