// Package commentcheck holds a test that reads the library's comments: a
// comment says why the code is as it is, for a reader who has only the
// code. The project's issue numbers and branch names mean nothing to that
// reader and go stale; they belong in commit messages. A second test asks
// each fixed sleep in a test to say why it is not a wait for a signal.
package commentcheck

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	issueRe  = regexp.MustCompile(`(?i)\bissues?\s*#?\d+`)
	branchRe = regexp.MustCompile("(?i)\\bbranch(?:es)?\\s+[`'\"]?([a-z0-9][\\w./-]*)")
)

// english are the words that follow "branch" in a comment about code (a
// branch of a script, a branch per case) rather than a Git branch's name.
// A comment that trips the test with a plain English word: add it here.
var english = map[string]bool{
	"a": true, "an": true, "and": true, "as": true, "at": true, "but": true,
	"by": true, "can": true, "does": true, "each": true, "for": true,
	"from": true, "here": true, "if": true, "in": true, "is": true,
	"it": true, "its": true, "may": true, "must": true, "of": true,
	"on": true, "only": true, "or": true, "per": true, "runs": true,
	"so": true, "taken": true, "that": true, "the": true, "then": true,
	"this": true, "to": true, "when": true, "where": true, "which": true,
	"with": true,
}

// names reports what a comment's text names: issue numbers, and branch
// names (a word after "branch" that is not plain English, or has a digit,
// a dash or a slash in it).
func names(text string) []string {
	var found []string
	found = append(found, issueRe.FindAllString(text, -1)...)
	for _, m := range branchRe.FindAllStringSubmatch(text, -1) {
		w := strings.ToLower(m[1])
		if !english[w] || strings.ContainsAny(w, "0123456789-/") {
			found = append(found, m[0])
		}
	}
	return found
}

// goComments returns the comments of a Go source file with their lines.
func goComments(path string, src []byte) map[int]string {
	out := map[int]string{}
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(path, -1, len(src)), src, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.COMMENT {
			// A block comment spans lines: report each on its own line.
			line := fset.Position(pos).Line
			for i, l := range strings.Split(lit, "\n") {
				out[line+i] = l
			}
		}
	}
}

// luaComments returns the text after "--" on each line of a Lua file. A
// "--" inside a string literal is taken as a comment too: a false finding
// there is rare and shows itself.
func luaComments(src []byte) map[int]string {
	out := map[int]string{}
	for i, l := range strings.Split(string(src), "\n") {
		if _, c, ok := strings.Cut(l, "--"); ok {
			out[i+1] = c
		}
	}
	return out
}

// walkModule calls visit with each file of the module at root (not in
// nested modules, testdata or hidden folders), its path and its path
// relative to root.
func walkModule(t *testing.T, root string, visit func(path, rel string) error) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module: the harness, not the library
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		return visit(path, rel)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// plant writes files (path relative to root: source) for a test of a check.
func plant(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for path, src := range files {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// findings walks the module at root (not into nested modules, testdata or
// hidden folders) and reports each comment in a non-test .go or .lua file
// that names an issue or a branch, as "path:line: what".
func findings(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	walkModule(t, root, func(path, rel string) error {
		name := filepath.Base(path)
		var comments map[int]string
		switch {
		case strings.HasSuffix(name, "_test.go"):
			return nil
		case strings.HasSuffix(name, ".go"):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			comments = goComments(path, src)
		case strings.HasSuffix(name, ".lua"):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			comments = luaComments(src)
		default:
			return nil
		}
		for line, text := range comments {
			for _, n := range names(text) {
				out = append(out, rel+":"+strconv.Itoa(line)+": "+n)
			}
		}
		return nil
	})
	return out
}

// TestNoIssueOrBranchInComments fails when a library comment names one of
// the project's issues or branches: say why instead.
func TestNoIssueOrBranchInComments(t *testing.T) {
	for _, f := range findings(t, filepath.Join("..", "..")) {
		t.Errorf("%s: a comment names an issue or a branch; say why the code is so instead", f)
	}
}

// TestFindingsCatchPlanted plants such comments in a module of its own and
// checks that each is found, and that code comments about a script's
// branches, test files and nested modules are not.
func TestFindingsCatchPlanted(t *testing.T) {
	root := t.TempDir()
	plant(t, root, map[string]string{
		"go.mod":      "module example.com/m\n",
		"a/a.go":      "package a\n\n// Fast path (issue 18).\nfunc A() {}\n\n/* kept\n   from branch guard */\nvar B = 1 // see Issue #25\n",
		"a/s.lua":     "local x = 1 -- branch h2-cmt's fix\n-- a comment per branch in each\nreturn x\n",
		"a/ok.go":     "package a\n\n// One comment per branch of the script; each branch that returns early.\nvar s = \"issue 7\" // the string is data, not a comment\n",
		"a/a_test.go": "package a\n\n// issue 1: tests may cite what they reproduce\n",
		"sub/go.mod":  "module example.com/sub\n",
		"sub/s.go":    "package sub\n\n// issue 2: another module\n",
	})

	got := findings(t, root)
	want := []string{
		filepath.Join("a", "a.go") + ":3: issue 18",
		filepath.Join("a", "a.go") + ":7: branch guard",
		filepath.Join("a", "a.go") + ":8: Issue #25",
		filepath.Join("a", "s.lua") + ":1: branch h2-cmt",
	}
	if len(got) != len(want) {
		t.Fatalf("findings = %q, want %q", got, want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("findings = %q: missing %q", got, w)
		}
	}
}
