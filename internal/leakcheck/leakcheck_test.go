package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { VerifyTestMain(m) }

// A goroutine that is still running is reported with its stack; once it
// ends, nothing is.
func TestRunningFindsALeak(t *testing.T) {
	stop := make(chan struct{})
	go leakyWorker(stop)
	leaked := Wait(50 * time.Millisecond)
	found := false
	for _, s := range leaked {
		found = found || strings.Contains(s, "leakyWorker")
	}
	if !found {
		t.Fatalf("the running worker was not reported: %q", leaked)
	}
	close(stop)
	if leaked := Wait(5 * time.Second); len(leaked) != 0 {
		t.Fatalf("reported after it ended: %q", leaked)
	}
}

func leakyWorker(stop chan struct{}) { <-stop }
