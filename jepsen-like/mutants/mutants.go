// Package mutants puts deliberate bugs into a copy of the library, one at a
// time, and runs each mutant through the matrix cells that should catch it:
// a chaos suite is only as good as the bugs it catches.
//
// A mutant is a textual change to one file of the repository (it must match
// exactly once, so a mutant that no longer applies is an error, not a pass).
// Each one is applied to a scratch copy of the tracked files, the lab is
// built there, and `quorumlock-lab chaos --quick` runs the mutant's cells. The
// mutant is killed when a run fails with a cell expected safe that showed a
// violation (or left lock keys without expiry); it survives when every cell
// passes. The unmutated tree runs the same cells first, as the control: if
// it fails, a kill would mean nothing.
package mutants

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// CellID names one cell of the matrix, on real processes or simulated:
// a mode × scenario, running a workload (the mutex workload when Workload
// is empty).
type CellID struct{ Mode, Scenario, Workload string }

func (c CellID) String() string {
	if c.Workload != "" && c.Workload != "mutex" {
		return c.Mode + "/" + c.Workload + " × " + c.Scenario
	}
	return c.Mode + " × " + c.Scenario
}

// workload is the cell's workload as the runners name it.
func (c CellID) workload() string {
	if c.Workload == "" {
		return "mutex"
	}
	return c.Workload
}

// Mutant is one deliberate bug.
type Mutant struct {
	// Name is how the command line and the table call it.
	Name string
	// Bug says what the change breaks.
	Bug string
	// File is the repository-relative file changed; Old is replaced by New
	// (Old must occur exactly once).
	File, Old, New string
	// Cells should catch it.
	Cells []CellID
	// SimSeeds, when above the run's seeds per cell, is how many seeds
	// each of its cells runs in the simulation: a bug that shows only in a
	// seed whose drawn link delays make the wrong node answer first.
	SimSeeds int
	// CI: make mutants-ci runs it (chaos --mutants --ci), in its first
	// cell only, on real processes and in the simulation. One per lock
	// kind and per safety feature: the first cell must kill it fast.
	CI bool
}

// Apply changes the copy of the repository at root.
func (m Mutant) Apply(root string) error {
	p := filepath.Join(root, filepath.FromSlash(m.File))
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("mutant %s: %w", m.Name, err)
	}
	if n := bytes.Count(b, []byte(m.Old)); n != 1 {
		return fmt.Errorf("mutant %s: the text to change occurs %d times in %s, want once (the code moved on: update the mutant)", m.Name, n, m.File)
	}
	return os.WriteFile(p, bytes.Replace(b, []byte(m.Old), []byte(m.New), 1), 0o644)
}

// Trial is one mutant (or the control) put to its cells: what they did
// to it.
type Trial struct {
	Mutant string
	// Killed names the cells that caught it, with why.
	Killed []string
	// Err is set when the mutant could not be judged (it did not build,
	// a cell could not run).
	Err     error
	Elapsed time.Duration
	// Runs is each run's verdict when Options.Repeat judged it more than
	// once (a kill names its cell, kill rate and first failing seed's
	// trace hash).
	Runs []string
}

// Flickers reports whether the runs of a repeated judgement disagree on
// killed or not.
func (o Trial) Flickers() bool {
	k := o.killedRuns()
	return k != 0 && k != len(o.Runs)
}

// killedRuns counts the runs that killed the mutant.
func (o Trial) killedRuns() int {
	k := 0
	for _, r := range o.Runs {
		if r != passedRun {
			k++
		}
	}
	return k
}

// sameRuns counts the runs whose verdict is word for word the first's
// (the same cell, kill rate and trace hash).
func (o Trial) sameRuns() int {
	n := 0
	for _, r := range o.Runs {
		if r == o.Runs[0] {
			n++
		}
	}
	return n
}

// passedRun is the verdict of a run in which every cell passed.
const passedRun = "passed every cell"

// Survived reports a mutant no cell caught.
func (o Trial) Survived() bool { return o.Err == nil && len(o.Killed) == 0 }

// Options of a run.
type Options struct {
	// Root is the repository (the directory of go.work).
	Root string
	// Only runs the mutants whose names are listed (all when empty).
	Only []string
	// Seed is passed to every matrix run.
	Seed int64
	// Progress, when set, is told what happens.
	Progress io.Writer
	// Sim runs the cells in the deterministic simulation (jepsen-like/sim,
	// built as a test binary in the scratch copy) instead of on real
	// processes; each cell runs up to SimSeeds seeds (default 5) and stops
	// at the first failing one.
	Sim      bool
	SimSeeds int
	// CI judges only the mutants marked CI, each in its first cell (the
	// control runs those cells).
	CI bool
	// Workloads, when set, keeps the mutants whose first cell runs one of
	// these workloads ("mutex" for a cell that names none).
	Workloads []string
	// Repeat, with Sim, judges each mutant (and the control) this many
	// times from one build, with the same seeds, and records each run's
	// verdict (Trial.Runs): a seed determines its run, so every run
	// must give the same verdict.
	Repeat int
	// Parallel is how many mutants (and control cells) are judged at
	// once (default 1). The cells mostly wait on timers and the network,
	// so 2-3 fit a 2-core machine.
	Parallel int
}

// Run judges every selected mutant, after the control. It returns the
// control's outcome first, then the mutants' in list order.
func Run(ctx context.Context, o Options, list []Mutant) ([]Trial, error) {
	sel, err := selectMutants(list, o.Only)
	if err != nil {
		return nil, err
	}
	if o.CI {
		sel = ciForm(sel)
	}
	if len(o.Workloads) > 0 {
		sel = slices.DeleteFunc(sel, func(m Mutant) bool {
			return len(m.Cells) == 0 || !slices.Contains(o.Workloads, m.Cells[0].workload())
		})
	}
	if len(sel) == 0 {
		return nil, errors.New("mutants: no mutant selected (--mutant, --ci and --workloads leave none)")
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	progress = &lineWriter{w: progress}
	var union []CellID
	seen := map[CellID]bool{}
	for _, m := range sel {
		for _, c := range m.Cells {
			if !seen[c] {
				seen[c] = true
				union = append(union, c)
			}
		}
	}
	par := max(o.Parallel, 1)
	// The control runs every cell; with Parallel > 1 its cells are split
	// into Parallel controls of their own, run at once.
	var controls []Mutant
	for i, c := range union {
		if i < par {
			controls = append(controls, Mutant{Name: "control (no mutant)"})
		}
		controls[i%par].Cells = append(controls[i%par].Cells, c)
	}
	start := time.Now()
	cs := judgeAll(ctx, o, controls, par, progress)
	control := Trial{Mutant: "control (no mutant)", Elapsed: time.Since(start)}
	for _, c := range cs {
		control.Killed = append(control.Killed, c.Killed...)
		control.Err = errors.Join(control.Err, c.Err)
		if c.Flickers() {
			control.Err = errors.Join(control.Err, fmt.Errorf("the control's cells %s", c.stability()))
		}
	}
	out := []Trial{control}
	if control.Err != nil || len(control.Killed) > 0 {
		return out, fmt.Errorf("mutants: the unmutated tree fails its cells (%v %v): the harness is not reliable, no mutant judged", control.Killed, control.Err)
	}
	out = append(out, judgeAll(ctx, o, sel, par, progress)...)
	return out, ctx.Err()
}

// ciForm keeps the mutants marked CI, each with its first cell alone.
func ciForm(list []Mutant) []Mutant {
	var out []Mutant
	for _, m := range list {
		if m.CI && len(m.Cells) > 0 {
			m.Cells = m.Cells[:1]
			out = append(out, m)
		}
	}
	return out
}

// judgeAll judges ms, par at a time; outcomes in ms's order.
func judgeAll(ctx context.Context, o Options, ms []Mutant, par int, progress io.Writer) []Trial {
	out := make([]Trial, len(ms))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, m := range ms {
		sem <- struct{}{}
		if ctx.Err() != nil {
			out[i] = Trial{Mutant: m.Name, Err: ctx.Err()}
			<-sem
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = judge(ctx, o, m, progress)
		}()
	}
	wg.Wait()
	return out
}

// lineWriter writes whole lines of concurrent judges one at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func selectMutants(list []Mutant, only []string) ([]Mutant, error) {
	if len(only) == 0 {
		return list, nil
	}
	var out []Mutant
	for _, name := range only {
		found := false
		for _, m := range list {
			if m.Name == name {
				out = append(out, m)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("mutants: no mutant %q", name)
		}
	}
	return out, nil
}

// judge copies the repository, applies m (the control has no File),
// builds the lab and runs m's cells, stopping at the first kill.
func judge(ctx context.Context, o Options, m Mutant, progress io.Writer) (res Trial) {
	start := time.Now()
	res.Mutant = m.Name
	defer func() { res.Elapsed = time.Since(start) }()
	dir, err := os.MkdirTemp("", "quorumlock-mutant-*")
	if err != nil {
		res.Err = err
		return res
	}
	defer os.RemoveAll(dir)
	if err := copyTracked(ctx, o.Root, dir); err != nil {
		res.Err = err
		fmt.Fprintf(progress, "%s: %v\n", m.Name, err)
		return res
	}
	if m.File != "" {
		if err := m.Apply(dir); err != nil {
			res.Err = err
			fmt.Fprintf(progress, "%s: %v\n", m.Name, err)
			return res
		}
	}
	bin := filepath.Join(dir, "quorumlock-mutant")
	// -trimpath: the scratch directory is not in the build's cache keys, so
	// only the mutated package and its importers compile again (seconds,
	// against ~40 s for a whole tree at a new path).
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./jepsen-like/cmd/quorumlock-lab")
	if o.Sim {
		build = exec.CommandContext(ctx, "go", "test", "-c", "-trimpath", "-o", bin, "./jepsen-like/sim")
	}
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"))
	if b, err := build.CombinedOutput(); err != nil {
		res.Err = fmt.Errorf("build: %v\n%s", err, b)
		fmt.Fprintf(progress, "%s: does not build\n", m.Name)
		return res
	}
	runs := 1
	if o.Sim && o.Repeat > 1 {
		runs = o.Repeat
	}
	for run := range runs {
		if run == 0 {
			judgeCells(ctx, o, m, bin, dir, &res)
			if runs > 1 {
				res.Runs = append(res.Runs, runVerdict(res))
			}
			continue
		}
		again := Trial{Mutant: m.Name}
		judgeCells(ctx, o, m, bin, dir, &again)
		res.Runs = append(res.Runs, runVerdict(again))
		res.Err = errors.Join(res.Err, again.Err)
	}
	switch {
	case len(res.Killed) > 0:
		fmt.Fprintf(progress, "%s: killed by %s (%v)\n", m.Name, res.Killed[0], time.Since(start).Round(time.Second))
	case res.Err != nil:
		fmt.Fprintf(progress, "%s: not judged: %v\n", m.Name, res.Err)
	default:
		fmt.Fprintf(progress, "%s: passed every cell (%v)\n", m.Name, time.Since(start).Round(time.Second))
	}
	if len(res.Runs) > 1 {
		fmt.Fprintf(progress, "%s: %s\n", m.Name, res.stability())
	}
	return res
}

// runVerdict is one run's verdict as Trial.Runs keeps it: the
// killing cell and why (its kill rate, first failing seed and trace
// hash), without the time the run took.
func runVerdict(o Trial) string {
	switch {
	case len(o.Killed) > 0:
		return simTime.ReplaceAllString(o.Killed[0], "")
	case o.Err != nil:
		return "not judged: " + o.Err.Error()
	}
	return passedRun
}

// simTime is the wall time runSimCell puts before a kill.
var simTime = regexp.MustCompile(`\[sim cell [^]]*\] `)

// stability says how far the runs of a repeated judgement agree.
func (o Trial) stability() string {
	n := len(o.Runs)
	if o.Flickers() {
		return fmt.Sprintf("VERDICT FLICKERS: killed in %d of %d runs", o.killedRuns(), n)
	}
	if o.killedRuns() == 0 {
		return fmt.Sprintf("same verdict in %d of %d runs (passed every cell in each)", n, n)
	}
	return fmt.Sprintf("same verdict in %d of %d runs (killed in %d); the same kill rate and trace hash in %d of %d", n, n, o.killedRuns(), o.sameRuns(), n)
}

// judgeCells runs m's cells in order until one kills it, into res.
func judgeCells(ctx context.Context, o Options, m Mutant, bin, dir string, res *Trial) {
	for _, c := range m.Cells {
		var (
			killed string
			err    error
		)
		if o.Sim {
			t0 := time.Now()
			killed, err = runSimCell(ctx, bin, dir, c, o.Seed, max(o.SimSeeds, m.SimSeeds))
			if killed != "" {
				// The build and copy are most of a mutant's time here: say
				// what the simulated cell itself took.
				killed = fmt.Sprintf("[sim cell %v] %s", time.Since(t0).Round(100*time.Millisecond), killed)
			}
		} else {
			killed, err = runCell(ctx, bin, dir, c, o.Seed)
		}
		if err != nil {
			res.Err = errors.Join(res.Err, fmt.Errorf("%s: %w", c, err))
			continue
		}
		if killed != "" {
			res.Killed = append(res.Killed, c.String()+": "+killed)
			return
		}
	}
}

// row is the part of the matrix JSON a kill is read from.
type row struct {
	Mode              string `json:"mode"`
	Scenario          string `json:"scenario"`
	ExpectedSafe      bool   `json:"expected_safe"`
	Verdict           string `json:"verdict"`
	VerdictNote       string `json:"verdict_note"`
	KeysWithoutExpiry int    `json:"keys_without_expiry"`
	Broken            string `json:"broken"`
	// The simulation's rows: the run's seed, trace hash and replay.
	Seed   uint64 `json:"seed"`
	Trace  string `json:"trace"`
	Replay string `json:"replay"`
}

// kill is why r caught the mutant ("" when it did not).
func (r row) kill() string {
	if (r.ExpectedSafe && r.Verdict == "refuted") || r.KeysWithoutExpiry > 0 {
		return r.VerdictNote
	}
	return r.Broken
}

// runCell runs one cell; killed says why it caught the mutant ("" when
// the cell passed).
func runCell(ctx context.Context, bin, dir string, c CellID, seed int64) (killed string, err error) {
	js := filepath.Join(dir, "cell.json")
	cmd := exec.CommandContext(ctx, bin, "chaos", "--quick", "--modes", c.Mode, "--scenarios", c.Scenario,
		"--workloads", c.workload(), "--seed", fmt.Sprint(seed), "--json", js)
	return judgeCell(cmd, dir, js)
}

// runSimCell runs one cell in the simulation's test binary (TestCell)
// over seeds seeds from seed; killed says why it caught the mutant.
func runSimCell(ctx context.Context, bin, dir string, c CellID, seed int64, seeds int) (killed string, err error) {
	if seeds <= 0 {
		seeds = 5
	}
	js := filepath.Join(dir, "cell.json")
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^TestCell$", "-sim.mode", c.Mode, "-sim.scenario", c.Scenario, "-sim.workload", c.workload(),
		"-sim.seed", fmt.Sprint(max(seed, 1)), "-sim.seeds", fmt.Sprint(seeds), "-sim.duration", "5s", "-sim.shrink=false",
		"-sim.keep-going", "-sim.json", js)
	// The test binary fails for a reproduced expected-unsafe cell too:
	// its exit says nothing the rows do not.
	rows, runErr, out, err := runRows(cmd, dir, js)
	if why, ok := crashed(err); ok {
		return why, nil
	} else if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "", fmt.Errorf("the cell did not run (does the scenario apply to the mode?) (%v): %s", runErr, out)
	}
	// Every seed runs: the kill rate says how firmly the cell catches the
	// mutant, and the first failing seed's trace hash and replay let one
	// run it again.
	var first *row
	k := 0
	for i, r := range rows {
		if r.kill() != "" {
			k++
			if first == nil {
				first = &rows[i]
			}
		}
	}
	if first == nil {
		return "", nil
	}
	return fmt.Sprintf("killed in %d of %d seeds; seed %d, trace %s: %s; replay: %s", k, len(rows), first.Seed, first.Trace, first.kill(), first.Replay), nil
}

// runRows runs cmd in dir, which writes a cell's JSON report to js, and
// returns the report's rows, the command's exit error and the end of its
// output; err only when there is no report.
func runRows(cmd *exec.Cmd, dir, js string) (rows []row, runErr error, out string, err error) {
	_ = os.Remove(js)
	cmd.Dir = dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	runErr = cmd.Run()
	out = tail(buf.String(), 400)
	raw, err := os.ReadFile(js)
	if err != nil {
		if why, ok := libraryPanic(buf.String()); ok {
			return nil, runErr, out, &libraryPanicError{why}
		}
		return nil, runErr, out, fmt.Errorf("no result (%v): %s", runErr, out)
	}
	var doc struct {
		Results []row `json:"results"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, runErr, out, err
	}
	return doc.Results, runErr, out, nil
}

// judgeCell runs cmd in dir, which writes the cell's JSON report to js,
// and reads it: killed is the note of the first row that caught the
// mutant. A failed exit with no failing row is an error (the CLI exits 1
// only for a failing row).
func judgeCell(cmd *exec.Cmd, dir, js string) (killed string, err error) {
	rows, runErr, out, err := runRows(cmd, dir, js)
	if why, ok := crashed(err); ok {
		return why, nil
	} else if err != nil {
		return "", err
	}
	for _, r := range rows {
		if k := r.kill(); k != "" {
			return k, nil
		}
	}
	if runErr != nil {
		return "", fmt.Errorf("chaos exited with %v and no failing row: %s", runErr, out)
	}
	if len(rows) == 0 {
		return "", fmt.Errorf("the cell did not run (does the scenario apply to the mode?): %s", out)
	}
	return "", nil
}

// libraryPanic reads the output of a cell that crashed before writing
// its result: a panic whose goroutine was in the library under test (in
// a goroutine of its own, such as an Election's Observe, where no worker
// can recover it; see workload.PanicSite) is what the mutant did, and
// kills it. Any other crash is the harness's, and leaves the cell
// unjudged.
func libraryPanic(out string) (string, bool) {
	i := strings.Index(out, "panic: ")
	for i > 0 && out[i-1] != '\n' {
		j := strings.Index(out[i+1:], "panic: ")
		if j < 0 {
			return "", false
		}
		i += 1 + j
	}
	if i < 0 {
		return "", false
	}
	site, lib := workload.PanicSite(out[i:])
	if !lib {
		return "", false
	}
	msg, _, _ := strings.Cut(out[i:], "\n")
	return fmt.Sprintf("%s (in %s)", strings.TrimSuffix(msg, " [recovered]"), site), true
}

// head is s cut to its first n bytes: a result says what killed the
// mutant first (the cell), then the detail.
func head(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// tail is s cut to its last n bytes: the end of a command's output says
// why it stopped.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// copyTracked copies the files git tracks in root (committed or staged)
// into dir.
func copyTracked(ctx context.Context, root, dir string) error {
	ls := exec.CommandContext(ctx, "git", "ls-files", "-z")
	ls.Dir = root
	b, err := ls.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
		src, dst := filepath.Join(root, f), filepath.Join(dir, f)
		data, err := os.ReadFile(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// FindRoot walks up from dir to the directory holding go.work.
func FindRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("mutants: no go.work above %s: run from a clone of the repository", dir)
		}
	}
}

// WriteTable writes the outcomes as a Markdown table.
func WriteTable(w io.Writer, list []Mutant, outs []Trial) {
	bug := map[string]string{}
	for _, m := range list {
		bug[m.Name] = m.Bug
	}
	fmt.Fprintln(w, "| mutant | bug | result | time |")
	fmt.Fprintln(w, "|---|---|---|--:|")
	killed, judged := 0, 0
	for _, o := range outs {
		result := "passed every cell (survived)"
		switch {
		case len(o.Killed) > 0:
			result = "killed: " + o.Killed[0]
		case o.Err != nil:
			result = "not judged: " + o.Err.Error()
		}
		if strings.HasPrefix(o.Mutant, "control") {
			if o.Survived() {
				result = "every cell passed"
			}
		} else if o.Err == nil {
			judged++
			if len(o.Killed) > 0 {
				killed++
			}
		}
		result = head(result, 240)
		if len(o.Runs) > 1 {
			result += " — " + o.stability()
		}
		fmt.Fprintf(w, "| %s | %s | %s | %v |\n", o.Mutant, bug[o.Mutant], strings.ReplaceAll(result, "|", "/"), o.Elapsed.Round(time.Second))
	}
	fmt.Fprintf(w, "\nscore: %d of %d mutants killed\n", killed, judged)
}

// libraryPanicError: a cell that wrote no report because the library
// panicked in a goroutine of its own (which no worker can recover). The
// mutant is killed; the note says where.
type libraryPanicError struct{ why string }

func (e *libraryPanicError) Error() string { return e.why }

// crashed reports whether err is a library panic, and its note.
func crashed(err error) (string, bool) {
	var lp *libraryPanicError
	if errors.As(err, &lp) {
		return lp.why, true
	}
	return "", false
}
