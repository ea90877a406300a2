package sim

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/quorum"
)

// Every run's goroutines live in its synctest bubble, which fails the test
// if one is left; goleak covers the rest (the differential test's real
// clients and server). go-redis's own log is dropped: dials refused by the
// faults are what a cell is for, and the soak would print ~100k of them;
// the lock's errors say which node failed.
func TestMain(m *testing.M) {
	redis.SetLogger(quorum.RedisLogger{})
	goleak.VerifyTestMain(m)
}
