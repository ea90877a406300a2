package sim

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoHarnessDependency: the simulation reads the catalog, not the
// matrix, so it builds without package chaos and the container stack
// (testcontainers, toxiproxy, docker) the matrix brings in.
func TestNoHarnessDependency(t *testing.T) {
	for _, pkg := range []string{".", "../catalog"} {
		out, err := exec.Command("go", "list", "-deps", "-test", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed %d packages: %s", pkg, len(deps), out)
		}
		for _, d := range deps {
			for _, bad := range []string{"/chaos", "testcontainers", "toxiproxy", "docker", "jepsen-like/matrix"} {
				if strings.Contains(d, bad) {
					t.Errorf("%s depends on %s", pkg, d)
				}
			}
		}
	}
}
