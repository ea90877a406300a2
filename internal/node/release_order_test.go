package node

import (
	"strings"
	"testing"
)

// TestReleaseStringFormFirst pins the release script's order: the
// fast-path string's branch (release.lua) ends before the prelude's first
// function, so a lone caller's release returns without building them (a
// third of a microsecond of the server's time per release, measured; see
// scripts.go).
func TestReleaseStringFormFirst(t *testing.T) {
	src := scriptNames[releaseScript.Hash()].src
	if src == "" {
		t.Fatal("the release script's source is not recorded")
	}
	branch := strings.Index(src, "elseif not v then\n  return 0\nend\n")
	fn := strings.Index(src, "local function")
	if branch < 0 || fn < 0 || fn < branch {
		t.Fatalf("the release script builds a function (at byte %d) before the string form returns (at byte %d)", fn, branch)
	}
	if strings.Contains(releaseLua, "split(") || strings.Contains(releaseLua, "local function") {
		t.Fatal("release.lua uses the prelude: it runs before it (scripts.go)")
	}
}
