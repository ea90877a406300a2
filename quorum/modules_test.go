package quorum

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// heavyModules are module paths (or parts of them) that belong to the
// harness, the CLI or the integrations, never to the library's go.mod:
// whoever imports quorum would inherit them as minimum versions.
var heavyModules = []string{
	"testcontainers", "moby", "docker", "toxiproxy", "chromedp", "prometheus",
	"go.opentelemetry.io/otel/sdk", "zerolog", "pgx",
}

// The library's go.mod (the repository root) requires none of the harness's
// dependencies: they live in the modules of chaos/, jepsen-like/ (with the
// lab), console/browsertest/, otelquorum/, guard/pgtest/ and bench/.
func TestLibraryGoModIsLight(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), "module github.com/quorumlock/quorumlock\n") {
		t.Fatalf("../go.mod is not the library's:\n%s", raw)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "module" || f[0] == "replace" {
			continue
		}
		for _, h := range heavyModules {
			if strings.Contains(line, h) {
				t.Errorf("the library's go.mod requires %q (%s): move the code that needs it to its own module", strings.TrimSpace(line), h)
			}
		}
	}
}

// A program that imports only quorum gets a small module graph: at most 12
// modules in `go list -m all` (it was 86 when the harness shared the
// library's go.mod), none of them heavy. Measured in a scratch module that
// uses this checkout through a replace, outside the workspace.
func TestConsumerModuleGraph(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/consumer\n\ngo 1.26.8\n\nrequire github.com/quorumlock/quorumlock v0.0.0\n\nreplace github.com/quorumlock/quorumlock => "+root+"\n")
	write("main.go", `package main

import (
	"fmt"

	"github.com/quorumlock/quorumlock/quorum"
)

func main() { fmt.Println(quorum.ErrNotObtained) }
`)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("mod", "tidy")
	run("build", "-o", os.DevNull, ".")
	mods := strings.Fields(strings.TrimSpace(run("list", "-m", "-f", "{{.Path}}", "all")))
	t.Logf("a program importing only quorum: %d modules: %s", len(mods), strings.Join(mods, " "))
	if len(mods) > 12 {
		t.Errorf("go list -m all lists %d modules, want at most 12", len(mods))
	}
	for _, m := range mods {
		for _, h := range heavyModules {
			if strings.Contains(m, h) {
				t.Errorf("the consumer's module graph has %s", m)
			}
		}
	}
}
