// Package typenames holds a test that reads the harness's source (the
// jepsen-like, chaos and bench modules): a type name that several of its
// packages use for different things (an operation's outcome, a mutant's
// fate, a simulated run's result) makes a reader stop at every use to ask
// which one is meant. Each word below names one concept across the whole
// harness; a package that needs another concept gives it a name that says
// what it is.
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

// oneMeaning are the type names declared in at most one harness package,
// with the concept each names.
var oneMeaning = map[string]string{
	"Outcome": "history.Outcome: how one operation ended (ok, fail, unknown)",
	"Verdict": "checker.Verdict: one check's three-way answer (ok, violated, unknown)",
	"Report":  "checker.Report: every check over one history",
	"Kind":    "history.Kind: what one operation did",
	"Cell":    "matrix.Cell: one mode × scenario × workload of the matrix",
	"Timing":  "catalog.Timing: the shape of a run a fault plan is laid out in",
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
// want found in the non-test Go files under the roots (not in testdata or
// hidden folders), by name. An alias of another package's type of the same
// name (Kind = catalog.Kind) re-exports that type and is not counted.
func typeDecls(t *testing.T, repo string, roots []string, want map[string]string) map[string][]decl {
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

// clashes returns, for each name declared in more than one package, its
// declarations.
func clashes(decls map[string][]decl) map[string][]string {
	out := map[string][]string{}
	for name, ds := range decls {
		pkgs := map[string]bool{}
		for _, d := range ds {
			pkgs[d.pkg] = true
		}
		if len(pkgs) < 2 {
			continue
		}
		for _, d := range ds {
			out[name] = append(out[name], d.pos)
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
	for name, concept := range oneMeaning {
		if len(decls[name]) == 0 {
			t.Errorf("type %s is declared nowhere in the harness; it should name %s (update the list)", name, concept)
		}
	}
	for name, at := range clashes(decls) {
		t.Errorf("type %s is declared in several harness packages (%s); it names one concept, %s: give the others a name that says what they are",
			name, strings.Join(at, ", "), oneMeaning[name])
	}
}

// The rule itself: two packages declaring one name clash; one package
// declaring it twice (two files, build tags) does not; a re-export by
// alias does not.
func TestClashes(t *testing.T) {
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
	want := map[string]string{"Kind": "", "Cell": "", "Timing": ""}
	got := clashes(typeDecls(t, dir, []string{"a", "b"}, want))
	if want := []string{"a/a.go:2", "b/b.go:5"}; len(got) != 1 || !slices.Equal(got["Kind"], want) {
		t.Fatalf("clashes = %v; want Kind alone, in a and b", got)
	}
}
