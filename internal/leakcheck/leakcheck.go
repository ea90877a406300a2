// Package leakcheck fails a test binary that leaves goroutines running
// after its tests: the library's promise that Close, Unlock and a decided
// acquisition leave nothing behind.
//
// It does for the library's own packages what go.uber.org/goleak does for
// the rest of the repository, without a dependency: the library's go.mod
// must stay light (every requirement it lists becomes a minimum version in
// its users' builds), and goleak would bring testify and yaml with it.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// VerifyTestMain runs the tests and then, if they passed, waits up to 5 s
// for the goroutines they started to end; it fails the binary (exit 1,
// with their stacks) when some are still running.
func VerifyTestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := Wait(5 * time.Second); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "leakcheck: %d goroutines still running after the tests:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// Wait returns the stacks of the goroutines other than the caller's and the
// runtime's that are still running after up to d (none when they all ended
// in time).
func Wait(d time.Duration) []string {
	deadline := time.Now().Add(d)
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		leaked := Running()
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(delay)
	}
}

// Running returns the stacks of the goroutines other than the caller's
// and the runtime's own (signal handling, the test runner's).
func Running() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(strings.TrimSpace(string(buf)), "\n\n")
	var out []string
	for _, s := range stacks[1:] { // the first is the caller's
		if !ignored(s) {
			out = append(out, s)
		}
	}
	return out
}

// ignored are goroutines that belong to the runtime, the test binary or a
// dependency's process-wide state, not to the code under test.
func ignored(stack string) bool {
	for _, f := range []string{
		"testing.RunTests", "testing.(*T).Run", "testing.(*M).", "testing.runFuzzTests",
		"os/signal.signal_recv", "os/signal.loop", "runtime.ensureSigM",
		"runtime.ReadTrace", "runtime/trace.Start",
		// go-redis v9.17.x (the library's minimum, used with GOWORK=off)
		// keeps one process-wide clock goroutine for its pools; newer
		// versions have none.
		"github.com/redis/go-redis/v9/internal/pool.startGlobalTimeCache",
	} {
		if strings.Contains(stack, f) {
			return true
		}
	}
	return false
}
