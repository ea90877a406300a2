package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// notYetMerged lists names the docs use that other branches of this round
// add (issue 28: restart detection by default, the dial check, the CLI's
// new flags, the defaults page; issue 26: the election page). TestDocsNameWhatExists accepts exactly these while
// they are missing, and fails once one of them exists, so the list gets
// emptied. COORDINATOR: empty this list after merging those branches.
var notYetMerged = []string{}

// libraryPackages are the packages whose exported names the docs may cite
// as pkg.Name, with their folders from the repository's root.
var libraryPackages = map[string]string{
	"quorum":     "quorum",
	"admin":      "quorum/admin",
	"observe":    "quorum/observe",
	"node":       "node",
	"multilock":  "multilock",
	"drift":      "drift",
	"guard":      "guard",
	"localredis": "localredis",
	"chaos":      "chaos",
	"otelquorum": "otelquorum",
	"console":    "console",
}

// internalPackages are not what a user imports: a bare ErrX or WithX in
// the docs must come from one of the other packages.
var internalPackages = []string{"node", "multilock", "drift"}

// retired are forms that compile no more (or mean something else now),
// with what to write instead.
var retired = map[string]string{
	"WithFencing()":      "WithFencing takes on bool; fencing is on by default",
	"client.MultiLock(":  "client.MutexAll(names)",
	"quorum.MultiLock(":  "client.MutexAll(names)",
	"ErrFenceNotWritten": "not exported by quorum: errors.Is(err, quorum.ErrNotObtained)",
}

// receivers are the variable names the docs give quorum's values
// (client.MutexAll, lease.Token, mu.Lock): what follows them must be a
// method of one of quorum's types.
var receivers = []string{"client", "locks", "lease", "mu", "m", "rw", "fm"}

var (
	qualifiedRE = regexp.MustCompile(`\b(` + strings.Join(keys(libraryPackages), "|") + `)\.([A-Z][A-Za-z0-9_]*)`)
	receiverRE  = regexp.MustCompile(`\b(` + strings.Join(receivers, "|") + `)\.([A-Z][A-Za-z0-9_]*)\(`)
	adminRE     = regexp.MustCompile(`\bAdmin\(\)\.([A-Z][A-Za-z0-9_]*)`)
	bareRE      = regexp.MustCompile("(?:^|[^.\\w])((?:Err|With)[A-Z][A-Za-z0-9_]*)\\b")
	codeSpanRE  = regexp.MustCompile("`[^`\n]+`")
	commandRE   = regexp.MustCompile(`\bquorumlock(-lab)?((?:\s+--?nodes(?:=|\s+)\S+)?)\s+([a-z][a-z0-9-]*)\b(.*)`)
	flagRE      = regexp.MustCompile(`(?:^|[\s\[(])--([a-z][a-z0-9-]*)`)
	loneFlagRE  = regexp.MustCompile("^`--([a-z][a-z0-9-]*)")
	linkRE      = regexp.MustCompile(`\]\(([^)#\s]+)(?:#[^)\s]*)?\)`)
)

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestDocsNameWhatExists fails when README.md or a page of docs/ names a
// Go identifier (quorum.X, admin.X, node.X, ..., a bare ErrX or WithX,
// client.Method(...)) that the library does not export, or a quorumlock
// command or flag the CLI does not have, or links to a file that is not
// there, so the docs cannot go stale unseen. Every stale name is reported,
// in one failure.
func TestDocsNameWhatExists(t *testing.T) {
	root := "../.."
	exported, methods := exportedNames(t, root)
	cmdFlags := cliFlags(t)

	files := []string{filepath.Join(root, "README.md")}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, pages...)

	missing := map[string][]string{} // name → where
	add := func(name, where string) { missing[name] = append(missing[name], where) }
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		inBlock := false
		for i, line := range strings.Split(string(text), "\n") {
			where := fmt.Sprintf("%s:%d", rel, i+1)
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inBlock = !inBlock
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				if strings.Contains(m[1], "://") || strings.HasPrefix(m[1], "mailto:") {
					continue
				}
				target := filepath.Join(filepath.Dir(f), m[1])
				if _, err := os.Stat(target); err != nil {
					rel, _ := filepath.Rel(root, target)
					add(filepath.ToSlash(rel)+" (linked, not there)", where)
				}
			}
			for _, m := range qualifiedRE.FindAllStringSubmatch(line, -1) {
				if !exported[m[1]][m[2]] {
					add(m[1]+"."+m[2], where)
				}
			}
			for _, m := range receiverRE.FindAllStringSubmatch(line, -1) {
				if !methods["quorum"][m[2]] {
					add(m[1]+"."+m[2]+"(…) (no quorum type has that method)", where)
				}
			}
			for _, m := range adminRE.FindAllStringSubmatch(line, -1) {
				if !methods["admin"][m[1]] {
					add("Admin()."+m[1], where)
				}
			}
			for form, instead := range retired {
				if strings.Contains(line, form) {
					add(form+" (retired: "+instead+")", where)
				}
			}
			for _, m := range bareRE.FindAllStringSubmatch(line, -1) {
				if !anyExports(exported, m[1]) {
					add(m[1]+" (in no library package)", where)
				}
			}
			// Commands and flags: in code blocks and code spans only,
			// where `quorumlock WORD` is a command line and not prose.
			var code []string
			if inBlock {
				code = []string{line}
			} else {
				code = codeSpanRE.FindAllString(line, -1)
			}
			for _, c := range code {
				if m := loneFlagRE.FindStringSubmatch(c); m != nil && !anyFlag(cmdFlags, m[1]) {
					add("--"+m[1]+" (no quorumlock command has it)", where)
				}
				m := commandRE.FindStringSubmatch(c)
				if m == nil {
					continue
				}
				name, rest := m[3], m[4]
				if m[1] != "" {
					name = "lab " + name
				}
				fl, ok := cmdFlags[name]
				if !ok {
					add("quorumlock "+name+" (no such command)", where)
					continue
				}
				if i := strings.Index(rest, " -- "); i >= 0 { // the command lock runs
					rest = rest[:i]
				}
				for _, f := range flagRE.FindAllStringSubmatch(rest, -1) {
					if !fl[f[1]] {
						add("quorumlock "+name+" --"+f[1], where)
					}
				}
			}
		}
	}

	var report []string
	for name, where := range missing {
		if allowed(name) != "" {
			continue
		}
		report = append(report, fmt.Sprintf("%s: %s", name, strings.Join(where, ", ")))
	}
	for _, name := range notYetMerged {
		if !stillMissing(missing, name) {
			report = append(report, name+": exists now (or no doc names it): take it off notYetMerged in docs_test.go")
		}
	}
	sort.Strings(report)
	if len(report) > 0 {
		t.Errorf("README.md and docs/ name %d things that do not exist (rename them in the docs, or add them to the code):\n\t%s",
			len(report), strings.Join(report, "\n\t"))
	}
}

// allowed returns the entry of notYetMerged that excuses a missing name
// its command), or "".
func allowed(missing string) string {
	short := strings.SplitN(missing, " (", 2)[0]
	for _, n := range notYetMerged {
		if short == n || strings.HasSuffix(short, " "+n) {
			return n
		}
	}
	return ""
}

func stillMissing(missing map[string][]string, entry string) bool {
	for k := range missing {
		if allowed(k) == entry {
			return true
		}
	}
	return false
}

func anyExports(exported map[string]map[string]bool, name string) bool {
	for pkg, names := range exported {
		if names[name] && !slices.Contains(internalPackages, pkg) {
			return true
		}
	}
	return false
}

func anyFlag(cmdFlags map[string]map[string]bool, name string) bool {
	for _, fl := range cmdFlags {
		if fl[name] {
			return true
		}
	}
	return false
}

// exportedNames parses the library packages' sources (tests left out):
// their exported top-level names, and the exported method names of each
// package's types.
func exportedNames(t *testing.T, root string) (exported, methods map[string]map[string]bool) {
	t.Helper()
	exported, methods = map[string]map[string]bool{}, map[string]map[string]bool{}
	for pkg, dir := range libraryPackages {
		exported[pkg], methods[pkg] = map[string]bool{}, map[string]bool{}
		fset := token.NewFileSet()
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: no Go files in %s (%v)", pkg, dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						exported[pkg][d.Name.Name] = true
					} else {
						methods[pkg][d.Name.Name] = true
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() {
								exported[pkg][s.Name.Name] = true
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									exported[pkg][n.Name] = true
								}
							}
						}
					}
				}
			}
		}
	}
	return exported, methods
}

// cliFlags asks every command for its --help and reads the flags it
// lists; --nodes and --help are global. The lab's one command,
// `quorumlock-lab chaos`, is "lab chaos": its flags are read from its
// sources, as the lab is a module of its own that this one cannot import.
func cliFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	flagLine := regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
	out := map[string]map[string]bool{"help": {}}
	for name := range commands {
		var buf bytes.Buffer
		if code := run([]string{name, "--help"}, &buf, &buf); code != exitOK {
			t.Fatalf("quorumlock %s --help: exit %d\n%s", name, code, buf.String())
		}
		fl := map[string]bool{"nodes": true, "help": true}
		for _, m := range flagLine.FindAllStringSubmatch(buf.String(), -1) {
			fl[m[1]] = true
		}
		if len(fl) == 2 && name != "demo" {
			t.Logf("quorumlock %s --help lists no flags:\n%s", name, buf.String())
		}
		out[name] = fl
	}
	out["lab chaos"] = labFlags(t, "../../jepsen-like/cmd/quorumlock-lab/chaos.go", "../../jepsen-like/matrix/cli.go")
	return out
}

// labFlags reads the flag names that files register on a FlagSet
// (fs.Bool("name", …), fs.IntVar(&x, "name", …)).
func labFlags(t *testing.T, files ...string) map[string]bool {
	t.Helper()
	def := regexp.MustCompile(`\bfs\.[A-Z][A-Za-z0-9]*\((?:&[^,]+,\s*)?"([a-z][a-z0-9-]*)"`)
	fl := map[string]bool{"help": true}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range def.FindAllStringSubmatch(string(src), -1) {
			fl[m[1]] = true
		}
	}
	if !fl["quick"] || !fl["mutants"] {
		t.Fatalf("read %d lab flags from %v, without --quick or --mutants: is the pattern stale?", len(fl), files)
	}
	return fl
}
