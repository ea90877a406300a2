// Command testsummary reads `go test -json` events on stdin and prints what a
// person needs from a large run: one line per package, the full output of
// every failed test, the reason of every skipped test, and a closing line
// "tests: N passed, N failed, N skipped". It exits 1 when a test or package
// failed, or when a test that needs redis-server was skipped (CI must run
// them), else 0.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// redisSkip matches the skip messages of tests that needed a Redis server.
var redisSkip = regexp.MustCompile(`redis-server|localredis`)

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	outputs := map[string]*strings.Builder{} // package/test → output
	key := func(e event) string { return e.Package + "\x00" + e.Test }
	var passed, failed, skipped int
	var failedTests, skippedTests []string
	pkgLines := map[string]string{}
	var nonJSON []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			nonJSON = append(nonJSON, sc.Text()) // build errors come as plain text
			continue
		}
		k := key(e)
		switch e.Action {
		case "output":
			b := outputs[k]
			if b == nil {
				b = &strings.Builder{}
				outputs[k] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				pkgLines[e.Package] = fmt.Sprintf("%-4s %s %.1fs", map[string]string{"pass": "ok", "fail": "FAIL", "skip": "skip"}[e.Action], e.Package, e.Elapsed)
				if e.Action == "fail" {
					failedTests = append(failedTests, k)
				}
				continue
			}
			if strings.Contains(e.Test, "/") { // subtests count with their parent
				if e.Action == "fail" {
					failedTests = append(failedTests, k)
				}
				continue
			}
			switch e.Action {
			case "pass":
				passed++
			case "fail":
				failed++
				failedTests = append(failedTests, k)
			case "skip":
				skipped++
				skippedTests = append(skippedTests, k)
			}
		}
	}
	for _, l := range nonJSON {
		fmt.Fprintln(out, l)
	}
	pkgs := make([]string, 0, len(pkgLines))
	for p := range pkgLines {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		fmt.Fprintln(out, pkgLines[p])
	}
	code := 0
	if len(failedTests) > 0 {
		code = 1
		fmt.Fprintln(out, "\n== failures")
		for _, k := range failedTests {
			pkg, test, _ := strings.Cut(k, "\x00")
			if test == "" {
				test = "(package)"
			}
			fmt.Fprintf(out, "--- %s %s\n", pkg, test)
			if b := outputs[k]; b != nil {
				fmt.Fprint(out, tail(b.String(), 120))
			}
		}
	}
	var redisSkips []string
	if len(skippedTests) > 0 {
		fmt.Fprintln(out, "\n== skipped")
		for _, k := range skippedTests {
			pkg, test, _ := strings.Cut(k, "\x00")
			reason := ""
			if b := outputs[k]; b != nil {
				reason = strings.TrimSpace(tail(b.String(), 3))
			}
			fmt.Fprintf(out, "%s %s: %s\n", pkg, test, oneLine(reason))
			if redisSkip.MatchString(reason) {
				redisSkips = append(redisSkips, pkg+" "+test)
			}
		}
	}
	if len(redisSkips) > 0 {
		code = 1
		fmt.Fprintf(out, "\nRedis-backed tests were skipped (CI must run them): %s\n", strings.Join(redisSkips, ", "))
	}
	fmt.Fprintf(out, "\ntests: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return code
}

func tail(s string, lines int) string {
	ls := strings.SplitAfter(s, "\n")
	if len(ls) > lines {
		ls = append([]string{"    …\n"}, ls[len(ls)-lines:]...)
	}
	return strings.Join(ls, "")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
