package proc

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestReadings(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	self, byPID := StatusKB(0, "VmRSS"), StatusKB(os.Getpid(), "VmHWM")
	if self <= 0 || byPID < self/2 {
		t.Errorf("VmRSS %d kB, VmHWM %d kB: want positive, the peak not far below the current", self, byPID)
	}
	if StatusKB(0, "NoSuchField") != 0 {
		t.Error("a missing field read as non-zero")
	}
	if f := strings.Fields(LoadAvg()); len(f) != 3 {
		t.Errorf("LoadAvg %q: want three numbers", LoadAvg())
	}
}
