package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every exit status the CLI can return is listed by quorumlock help: each
// exit… constant of the package is in exitCodes, and every exitError is
// made with one of them (or exitCode, a command's own status passed on).
// exitCodes is what help prints (TestHelpExitCodesAndGlobalFlags).
func TestEveryExitCodeListed(t *testing.T) {
	listed := map[int]bool{}
	for _, e := range exitCodes {
		if listed[e.code] {
			t.Errorf("exit status %d listed twice", e.code)
		}
		listed[e.code] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	consts := map[string]int{}
	var codes []ast.Expr // the code of every exitError literal
	var returns []ast.Expr
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GenDecl:
				if n.Tok != token.CONST {
					return true
				}
				for _, spec := range n.Specs {
					n := spec.(*ast.ValueSpec)
					for i, name := range n.Names {
						if !strings.HasPrefix(name.Name, "exit") || i >= len(n.Values) {
							continue
						}
						lit, ok := n.Values[i].(*ast.BasicLit)
						if !ok {
							t.Errorf("%s: %s is not a literal exit status", fset.Position(n.Pos()), name.Name)
							continue
						}
						v, _ := strconv.Atoi(lit.Value)
						consts[name.Name] = v
					}
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); ok && id.Name == "exitError" {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok && kv.Key.(*ast.Ident).Name == "code" {
							codes = append(codes, kv.Value)
						}
					}
				}
			case *ast.FuncDecl:
				// run and report return the process's exit status.
				if n.Name.Name == "run" || n.Name.Name == "report" {
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
							returns = append(returns, r.Results[0])
						}
						return true
					})
				}
			}
			return true
		})
	}
	if len(consts) < 6 || len(codes) == 0 || len(returns) == 0 {
		t.Fatalf("found %d exit constants, %d exitError literals, %d returns: is the test looking at the right files?", len(consts), len(codes), len(returns))
	}
	for name, v := range consts {
		if !listed[v] {
			t.Errorf("%s = %d is not in exitCodes (quorumlock help)", name, v)
		}
	}
	for _, e := range append(codes, returns...) {
		switch e := e.(type) {
		case *ast.Ident:
			if _, ok := consts[e.Name]; !ok {
				t.Errorf("%s: exit status %s is not an exit constant", fset.Position(e.Pos()), e.Name)
			}
		case *ast.CallExpr:
			// exitCode(...): the command's own status; run(...) and
			// report(...): the statuses checked here; ec.ExitCode(): an
			// exitError's code, checked above.
			name := ""
			switch f := e.Fun.(type) {
			case *ast.Ident:
				name = f.Name
			case *ast.SelectorExpr:
				name = f.Sel.Name
			}
			if name != "exitCode" && name != "run" && name != "report" && name != "ExitCode" {
				t.Errorf("%s: exit status from %s()", fset.Position(e.Pos()), name)
			}
		default:
			t.Errorf("%s: exit status is neither an exit constant nor exitCode(...)", fset.Position(e.Pos()))
		}
	}
}
