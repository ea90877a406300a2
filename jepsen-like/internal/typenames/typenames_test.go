// Package typenames holds a test that reads the harness's source (the
// jepsen-like, chaos and bench modules): a type name that several of its
// packages use for different things (an operation's outcome, a mutant's
// fate, a simulated run's result) makes a reader stop at every use to ask
// which one is meant. Each name in oneMeaning names one concept across the
// whole harness, declared in one package; a package that needs another
// concept gives it a name that says what it is.
package typenames

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// meaning is what a type name names in the harness: the one package that
// declares it, and the concept.
type meaning struct{ home, concept string }

// oneMeaning are the type names that name one concept across the harness;
// no package but the home declares a type of that name.
var oneMeaning = map[string]meaning{
	"Outcome": {"jepsen-like/history", "how one operation ended (ok, fail, unknown)"},
	"Op":      {"jepsen-like/history", "one operation of a history"},
	"Kind":    {"jepsen-like/history", "what one operation did"},
	"Verdict": {"jepsen-like/checker", "one check's three-way answer (ok, violated, unknown)"},
	"Result":  {"jepsen-like/checker", "one check's result"},
	"Report":  {"jepsen-like/checker", "every check over one history"},
	"Cell":    {"jepsen-like/matrix", "one mode × scenario × workload of the matrix"},
	"Timing":  {"jepsen-like/catalog", "the shape of a run a fault plan is laid out in"},
	"Locker":  {"jepsen-like/workload", "the lock under test, as a workload takes it"},
	"Latency": {"chaos", "the fault that delays a node's traffic"},
}

// repo is the repository's root from this package's directory, and harness
// are the harness modules in it.
var (
	repo    = filepath.Join("..", "..", "..")
	harness = []string{"jepsen-like", "chaos", "bench"}
)

// decl is one package-level type declaration.
type decl struct{ pkg, pos string }

// typeDecls returns the package-level type declarations of the names in
// want found in the non-test Go files under the roots (folders of repo; not
// in testdata or hidden folders), by name. An alias of another package's
// type of the same name (sim's Timing = catalog.Timing) re-exports that
// type and is not counted.
func typeDecls(t *testing.T, repo string, roots []string, want map[string]meaning) map[string][]decl {
	t.Helper()
	out := map[string][]decl{}
	fset := token.NewFileSet()
	for _, r := range roots {
		root := filepath.Join(repo, r)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, dcl := range f.Decls {
				g, ok := dcl.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE {
					continue
				}
				for _, s := range g.Specs {
					ts := s.(*ast.TypeSpec)
					if _, ok := want[ts.Name.Name]; !ok || reexport(ts) {
						continue
					}
					rel, err := filepath.Rel(repo, path)
					if err != nil {
						return err
					}
					rel = filepath.ToSlash(rel)
					out[ts.Name.Name] = append(out[ts.Name.Name], decl{
						pkg: filepath.ToSlash(filepath.Dir(rel)),
						pos: rel + ":" + strconv.Itoa(fset.Position(ts.Pos()).Line),
					})
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("reading %s: %v", root, err)
		}
	}
	return out
}

// reexport reports whether ts is an alias of another package's type of
// the same name.
func reexport(ts *ast.TypeSpec) bool {
	sel, ok := ts.Type.(*ast.SelectorExpr)
	return ts.Assign.IsValid() && ok && sel.Sel.Name == ts.Name.Name
}

// strays returns, by name, the declarations outside the name's home.
func strays(decls map[string][]decl, want map[string]meaning) map[string][]string {
	out := map[string][]string{}
	for name, ds := range decls {
		for _, d := range ds {
			if d.pkg != want[name].home {
				out[name] = append(out[name], d.pos)
			}
		}
		slices.Sort(out[name])
	}
	return out
}

func TestOneMeaningPerTypeName(t *testing.T) {
	for _, r := range harness {
		if _, err := os.Stat(filepath.Join(repo, r, "go.mod")); err != nil {
			t.Fatalf("harness module %s: %v", r, err)
		}
	}
	decls := typeDecls(t, repo, harness, oneMeaning)
	for name, m := range oneMeaning {
		if len(decls[name]) == 0 {
			t.Errorf("type %s is not declared in %s: update the list (it names %s there)", name, m.home, m.concept)
		}
	}
	for name, at := range strays(decls, oneMeaning) {
		m := oneMeaning[name]
		t.Errorf("type %s is declared outside %s (%s); in the harness it names %s: give the others a name that says what they are",
			name, m.home, strings.Join(at, ", "), m.concept)
	}
}

// The rule itself: a declaration outside the name's home is a stray, in
// the home (in two files, as with build tags) it is not, nor is a
// re-export by alias, a test file's or a testdata file's.
func TestStrays(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", "package a\ntype Kind string\ntype Cell struct{}\n")
	write("a/a_linux.go", "package a\ntype Timing int\n")
	write("a/a_other.go", "package a\ntype Timing int64\n")
	write("b/b.go", "package b\nimport \"x/a\"\ntype (\n\tCell = a.Cell\n\tKind int\n)\n")
	write("b/b_test.go", "package b\ntype Timing struct{}\n")
	write("b/testdata/c.go", "package c\ntype Timing struct{}\n")
	want := map[string]meaning{"Kind": {home: "a"}, "Cell": {home: "a"}, "Timing": {home: "a"}}
	got := strays(typeDecls(t, dir, []string{"a", "b"}, want), want)
	if len(got) != 1 || !slices.Equal(got["Kind"], []string{"b/b.go:5"}) {
		t.Fatalf("strays = %v; want b's Kind alone", got)
	}
}
