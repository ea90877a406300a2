package commentcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pollPrefixes name test helpers whose sleep is the interval of a poll
// (waitAttempts, pollUntil, Eventually): the name says why it sleeps.
var pollPrefixes = []string{"wait", "poll", "eventually"}

// uncommentedSleeps walks the module at root (not into nested modules,
// testdata or hidden folders) and reports each time.Sleep in a _test.go
// file that says nothing about why, as "path:line". A sleep says why with
// a comment on its line or on the line above, or by being in a function
// named for polling.
//
// A test that sleeps "to let it get there" is slow when the machine is
// idle and flaky when it is loaded; the fix is to wait for a signal (a
// channel, Watch's ready, PUBSUB NUMSUB, testutil.Eventually). A sleep that
// is the thing tested (a TTL passing, a holder working) stays, and its
// comment tells the next reader so.
func uncommentedSleeps(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	walkModule(t, root, func(path, rel string) error {
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, line := range sleepsWithoutWhy(fset, f) {
			out = append(out, rel+":"+strconv.Itoa(line))
		}
		return nil
	})
	return out
}

// sleepsWithoutWhy returns the lines of f's time.Sleep calls that have no
// comment on their line or the line above and are not in a function named
// for polling.
func sleepsWithoutWhy(fset *token.FileSet, f *ast.File) []int {
	commented := map[int]bool{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			for l := fset.Position(c.Pos()).Line; l <= fset.Position(c.End()).Line; l++ {
				commented[l] = true
			}
		}
	}
	var lines []int
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil || isPoll(fd.Name.Name) {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Sleep" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "time" {
				return true
			}
			if l := fset.Position(call.Pos()).Line; !commented[l] && !commented[l-1] {
				lines = append(lines, l)
			}
			return true
		})
	}
	return lines
}

func isPoll(name string) bool {
	name = strings.ToLower(name)
	for _, p := range pollPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// TestTestSleepsSayWhy fails on a fixed sleep in a test that does not say
// why no signal can replace it.
func TestTestSleepsSayWhy(t *testing.T) {
	for _, f := range uncommentedSleeps(t, filepath.Join("..", "..")) {
		t.Errorf("%s: time.Sleep without a comment: wait for a signal instead, or say why the sleep is the thing tested", f)
	}
}

// TestUncommentedSleepsCatchPlanted plants sleeps in a module of its own
// and checks that the uncommented one is found, and that commented ones,
// those in polling helpers, non-test files and nested modules are not.
func TestUncommentedSleepsCatchPlanted(t *testing.T) {
	root := t.TempDir()
	plant(t, root, map[string]string{
		"go.mod": "module example.com/m\n",
		"a/a_test.go": `package a

import "time"

func TestA() {
	go func() {
		time.Sleep(time.Second)
	}()
	time.Sleep(time.Second) // the TTL passes
	// The holder works.
	time.Sleep(time.Millisecond)
	time.Sleep(2 * time.Millisecond)
}

func waitReady() { time.Sleep(time.Millisecond) }
`,
		"a/a.go":        "package a\n\nimport \"time\"\n\nfunc A() { time.Sleep(time.Second) }\n",
		"sub/go.mod":    "module example.com/sub\n",
		"sub/s_test.go": "package sub\n\nimport \"time\"\n\nfunc TestS() { time.Sleep(time.Second) }\n",
	})

	got := uncommentedSleeps(t, root)
	want := []string{
		filepath.Join("a", "a_test.go") + ":7",
		filepath.Join("a", "a_test.go") + ":12",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("uncommented sleeps = %q, want %q", got, want)
	}
}
