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
	var s summary
	s.read(in)
	return s.write(out)
}

// summary is what a go test -json stream said: counts of top-level tests,
// the failed and skipped ones with their output, one line per package, and
// the lines that were not JSON (build errors).
type summary struct {
	outputs                   map[string]*strings.Builder // key(event) → output
	passed, failed, skipped   int
	failedTests, skippedTests []string
	pkgLines                  map[string]string
	nonJSON                   []string
}

// key names a test of a package (the package itself when Test is empty).
func key(e event) string { return e.Package + "\x00" + e.Test }

func (s *summary) read(in io.Reader) {
	s.outputs = map[string]*strings.Builder{}
	s.pkgLines = map[string]string{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			s.nonJSON = append(s.nonJSON, sc.Text()) // build errors come as plain text
			continue
		}
		s.add(e)
	}
}

// add counts one event.
func (s *summary) add(e event) {
	k := key(e)
	switch e.Action {
	case "output":
		b := s.outputs[k]
		if b == nil {
			b = &strings.Builder{}
			s.outputs[k] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			s.pkgLines[e.Package] = fmt.Sprintf("%-4s %s %.1fs", map[string]string{"pass": "ok", "fail": "FAIL", "skip": "skip"}[e.Action], e.Package, e.Elapsed)
			if e.Action == "fail" {
				s.failedTests = append(s.failedTests, k)
			}
			return
		}
		if strings.Contains(e.Test, "/") { // subtests count with their parent
			if e.Action == "fail" {
				s.failedTests = append(s.failedTests, k)
			}
			return
		}
		switch e.Action {
		case "pass":
			s.passed++
		case "fail":
			s.failed++
			s.failedTests = append(s.failedTests, k)
		case "skip":
			s.skipped++
			s.skippedTests = append(s.skippedTests, k)
		}
	}
}

// write prints the summary and returns the exit code: 1 when a test
// failed or a Redis-backed test was skipped.
func (s *summary) write(out io.Writer) int {
	for _, l := range s.nonJSON {
		fmt.Fprintln(out, l)
	}
	pkgs := make([]string, 0, len(s.pkgLines))
	for p := range s.pkgLines {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		fmt.Fprintln(out, s.pkgLines[p])
	}
	code := 0
	if len(s.failedTests) > 0 {
		code = 1
		s.writeFailures(out)
	}
	if redisSkips := s.writeSkips(out); len(redisSkips) > 0 {
		code = 1
		fmt.Fprintf(out, "\nRedis-backed tests were skipped (CI must run them): %s\n", strings.Join(redisSkips, ", "))
	}
	fmt.Fprintf(out, "\ntests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
	return code
}

// writeFailures prints each failed test with the end of its output.
func (s *summary) writeFailures(out io.Writer) {
	fmt.Fprintln(out, "\n== failures")
	for _, k := range s.failedTests {
		pkg, test, _ := strings.Cut(k, "\x00")
		if test == "" {
			test = "(package)"
		}
		fmt.Fprintf(out, "--- %s %s\n", pkg, test)
		if b := s.outputs[k]; b != nil {
			fmt.Fprint(out, tail(b.String(), 120))
		}
	}
}

// writeSkips prints each skipped test with its reason and returns those
// skipped for want of Redis.
func (s *summary) writeSkips(out io.Writer) (redisSkips []string) {
	if len(s.skippedTests) == 0 {
		return nil
	}
	fmt.Fprintln(out, "\n== skipped")
	for _, k := range s.skippedTests {
		pkg, test, _ := strings.Cut(k, "\x00")
		reason := ""
		if b := s.outputs[k]; b != nil {
			reason = strings.TrimSpace(tail(b.String(), 3))
		}
		fmt.Fprintf(out, "%s %s: %s\n", pkg, test, oneLine(reason))
		if redisSkip.MatchString(reason) {
			redisSkips = append(redisSkips, pkg+" "+test)
		}
	}
	return redisSkips
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
