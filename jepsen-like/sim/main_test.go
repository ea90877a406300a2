package sim

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/quorum/observe"
)

// Every run's goroutines live in its synctest bubble, which fails the test
// if one is left; goleak covers the rest (the differential test's real
// clients and server). go-redis's own log is dropped: dials refused by the
// faults are what a cell is for, and the soak would print ~100k of them;
// the lock's errors say which node failed.
//
// The garbage collector runs at GOGC=400 unless GOGC says otherwise: a run's
// live heap is a few megabytes, and at the default 100 the collector's
// marking and assists took about a tenth of the CPU in a profile of
// TestThroughput (redlock-3 × random).
func TestMain(m *testing.M) {
	redis.SetLogger(observe.RedisLogger{})
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	goleak.VerifyTestMain(m)
}
