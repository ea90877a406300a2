package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxGateBytes bounds the gate CLI's binary as go install builds it, with
// symbols and DWARF. A package that calls methods by name through reflect
// (text/template, html/template) makes the linker keep every exported
// method of every type, go-redis' whole command set among them.
const maxGateBytes = 15 << 20

// The gate CLI builds as `go install
// github.com/quorumlock/quorumlock/cmd/quorumlock@VERSION` will build it:
// from the library's go.mod alone (GOWORK=off), with no network
// (GOPROXY=off: the module cache only) and a go.mod the build may not
// change (-mod=readonly). That go.mod has no replace directive (go install
// refuses one); every module the CLI links is the library or one of its
// go.mod's requirements, at most 10; the binary is at most maxGateBytes.
func TestGateBuildsFromLibraryModuleAlone(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]bool{"github.com/quorumlock/quorumlock": true}
	inRequire := false
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "replace":
			t.Errorf("the library's go.mod has a replace directive (go install refuses it): %s", line)
		case f[0] == "require" && len(f) > 1 && f[1] == "(":
			inRequire = true
		case f[0] == "require" && len(f) >= 3:
			required[f[1]] = true
		case inRequire && f[0] == ")":
			inRequire = false
		case inRequire && len(f) >= 2:
			required[f[0]] = true
		}
	}
	if len(required) < 3 {
		t.Fatalf("read %d requirements from the library's go.mod: is the parser stale?\n%s", len(required), raw)
	}
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOPROXY=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("GOWORK=off GOPROXY=off go %s: %v\n%s(a module missing from the cache: run GOWORK=off go mod download in the repository's root)",
				strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(goCmd("list", "-deps", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}", "."), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "text/template" {
			t.Errorf("the gate CLI links text/template: its calls of methods by name keep every exported method in the binary")
		}
		if len(f) > 1 {
			seen[f[1]] = true
		}
	}
	var mods []string
	for m := range seen {
		mods = append(mods, m)
		if !required[m] {
			t.Errorf("the gate CLI links %s, which the library's go.mod does not require", m)
		}
	}
	t.Logf("the gate CLI links %d modules: %s", len(mods), strings.Join(mods, " "))
	if !seen["github.com/redis/go-redis/v9"] || len(mods) > 10 {
		t.Errorf("the gate CLI links %d modules (want go-redis among at most 10)", len(mods))
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "quorumlock")
	goCmd("build", "-o", bin, ".")
	f, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gate CLI binary: %.1f MB (go install's default build, with symbols and DWARF)", float64(f.Size())/1e6)
	if f.Size() > maxGateBytes {
		t.Errorf("the gate CLI is %d bytes, over %d: what made it grow? (go tool nm on it: does it link text/template?)", f.Size(), maxGateBytes)
	}
}
