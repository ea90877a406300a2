package quorum

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/multilock"
)

// The node handle is what the core drives; the core is itself a sub-lock.
var (
	_ multilock.Locker = (*node.Lock)(nil)
	_ multilock.Fencer = (*node.Lock)(nil)
	_ multilock.Locker = (*multilock.MultiLock)(nil)
)

// The library packages must never pull in the chaos suite or its tools, and
// the core must stay ignorant of Redis.
func TestLibraryImports(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	forbidden := []string{"toxiproxy", "testcontainers", "/chaos", "jepsen-like", "/localredis", "/cmd/"}
	for _, pkg := range []string{"drift", "node", "multilock", "internal/node", "quorum"} {
		out, err := exec.Command(goBin, "list", "-deps", "github.com/quorumlock/quorumlock/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		for _, d := range deps {
			for _, f := range forbidden {
				if strings.Contains(d, f) {
					t.Errorf("%s imports %s", pkg, d)
				}
			}
			core := pkg == "multilock"
			if (core || pkg == "drift") && strings.Contains(d, "go-redis") {
				t.Errorf("%s imports Redis (%s); it must drive the Locker interface only", pkg, d)
			}
			if core && strings.HasSuffix(d, "/node") {
				t.Errorf("multilock imports node")
			}
			// The Redis node implements the core's interfaces without
			// knowing the core; the public node hands its locks out as
			// multilock.Locker, so it alone may import it.
			if pkg == "internal/node" && strings.HasSuffix(d, "/multilock") {
				t.Errorf("internal/node imports multilock")
			}
		}
	}
}
