// Package proc reads what the bench reports about processes and the
// machine from /proc (Linux); elsewhere every reading is zero or empty.
package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// StatusKB is a "kB" field of /proc/PID/status, e.g. "VmRSS" or "VmHWM";
// pid 0 is this process. 0 when there is no such field.
func StatusKB(pid int, field string) int64 {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// LoadAvg is the machine's 1, 5 and 15 minute load averages.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
