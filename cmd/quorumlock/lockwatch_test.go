package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// timedLines records each line written to it with when it arrived.
type timedLines struct {
	mu    sync.Mutex
	start time.Time
	buf   string
	lines []timedLine
}

type timedLine struct {
	at   time.Duration
	text string
}

func (w *timedLines) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf += string(p)
	for {
		i := strings.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines = append(w.lines, timedLine{time.Since(w.start), w.buf[:i]})
		w.buf = w.buf[i+1:]
	}
}

func (w *timedLines) snapshot() []timedLine {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]timedLine(nil), w.lines...)
}

func (w *timedLines) String() string {
	var b strings.Builder
	for _, l := range w.snapshot() {
		fmt.Fprintf(&b, "%8v %s\n", l.at.Round(time.Millisecond), l.text)
	}
	return b.String()
}

// startTimed starts the CLI with stderr recorded line by line; the process
// is killed at the end of the test.
func startTimed(t *testing.T, bin string, args ...string) (*exec.Cmd, *timedLines, <-chan int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cmd.Environ(), "QUORUMLOCK_NODES=")
	errw := &timedLines{start: time.Now()}
	cmd.Stderr = errw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, exited := make(chan int, 1), make(chan struct{})
	go func() {
		done <- exitCode(cmd.Wait(), -1)
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return cmd, errw, done
}

// waitLine waits until a line of w contains want, at most d; it returns
// the line.
func waitLine(t *testing.T, w *timedLines, want string, d time.Duration) timedLine {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, l := range w.snapshot() {
			if strings.Contains(l.text, want) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line with %q on stderr within %v:\n%s", want, d, w)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exitsZero waits (at most 20 s) for a started lock to exit 0.
func exitsZero(t *testing.T, done <-chan int, errw *timedLines, when string) {
	t.Helper()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("lock exited %d%s:\n%s", code, when, errw)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("lock still waiting 20s%s:\n%s", when, errw)
	}
}

// lock against three ports that refuse connections: without --wait it
// never exits by itself, but says at once on stderr (and again every
// reportEvery) that no node answers and why; --try exits 3 at once, not 75.
func TestLockAllNodesRefuse(t *testing.T) {
	bin := buildCLI(t)
	dead := []string{testutil.RefusedAddr(t), testutil.RefusedAddr(t), testutil.RefusedAddr(t)}
	nodes := "redis://" + strings.Join(dead, ",redis://")

	code, out, stderr := runBin(t, bin, []string{"QUORUMLOCK_NODES="}, "lock", "--nodes", nodes, "--try", "x", "--", "true")
	if code != exitUnsure || !strings.Contains(stderr, `lock "x" not obtained at once (--try): `) || !strings.Contains(stderr, "a lock needs 2") || !strings.Contains(stderr, "connection refused") {
		t.Fatalf("--try: exit %d, want %d\n%s%s", code, exitUnsure, out, stderr)
	}
	if strings.Count(stderr, "\n") != 1 || doubledPrefix(stderr) {
		t.Errorf("--try: want one error line with one prefix:\n%s", stderr)
	}

	_, errw, done := startTimed(t, bin, "lock", "--nodes", nodes, "x", "--", "true")
	first := waitLine(t, errw, `quorumlock lock: waiting for "x": `, 5*time.Second)
	t.Logf("first report after %v: %s", first.at, first.text)
	if first.at > time.Second {
		t.Errorf("first report after %v, want at once (within 1s)", first.at)
	}
	if !strings.Contains(first.text, "do not answer, ") || !strings.Contains(first.text, "a lock needs 2 of 3 (") || !strings.Contains(first.text, "connection refused") {
		t.Errorf("the report does not say how many answer and why: %s", first.text)
	}
	// Repeated while it waits: a report at least reportEvery after the first.
	bound := 2*reportEvery + 3*time.Second
	deadline := time.Now().Add(bound)
	for {
		var later *timedLine
		for _, l := range errw.snapshot() {
			if strings.Contains(l.text, "waiting for") && l.at >= first.at+reportEvery-time.Second {
				later = &l
				break
			}
		}
		if later != nil {
			t.Logf("repeated after %v: %s", later.at, later.text)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no repeated report within %v:\n%s", bound, errw)
		}
		time.Sleep(50 * time.Millisecond) // poll: the command reports on its own schedule
	}
	select {
	case code := <-done:
		t.Fatalf("lock without --wait exited %d while no node answered:\n%s", code, errw)
	default:
	}
	for _, l := range errw.snapshot() {
		if !strings.HasPrefix(l.text, "quorumlock lock: waiting for ") {
			t.Errorf("unexpected stderr line (go-redis log?): %s", l.text)
		}
	}
	if n := len(errw.snapshot()); n > 8 {
		t.Errorf("%d lines on stderr in %v:\n%s", n, bound, errw)
	}
}

// Fresh nodes without persistence sit out for the restart delay (the TTL):
// a waiting lock says so, with each node's uptime and countdown, once (not
// on every attempt) and never as nodes that do not answer; then it gets
// the lock.
func TestLockNodesSittingOut(t *testing.T) {
	bin := buildCLI(t)
	servers := localredis.StartNT(t, 3, localredis.Config{Persistence: localredis.NoPersistence})
	_, errw, done := startTimed(t, bin, "lock", "--nodes", testutil.URLs(servers), "--ttl", "4s", "young", "--", "true")
	exitsZero(t, done, errw, "")
	lines := errw.snapshot()
	sitting := 0
	for _, l := range lines {
		if strings.Contains(l.text, "do not answer") || strings.Contains(l.text, "0 of 3") {
			t.Errorf("nodes sitting out reported as silent: %s", l.text)
		}
		if strings.Contains(l.text, "sit out after a restart") && strings.Contains(l.text, "up only ") {
			sitting++
		}
	}
	// A fresh node's uptime may be read a second late: at most a report
	// per change of which nodes sit out, plus one every reportEvery.
	if sitting == 0 || len(lines) > 5 {
		t.Errorf("%d lines, %d saying the nodes sit out; want a few, at least one:\n%s", len(lines), sitting, errw)
	}
}

// When the nodes come back, a waiting lock says so and gets the lock; a
// lock held by another owner on healthy nodes exits 75, not 3.
func TestLockNodesComeBackAndHeld(t *testing.T) {
	bin := buildCLI(t)
	servers := localredis.StartNT(t, 3, localredis.Config{Persistence: localredis.AOFAlways})
	nodes := testutil.URLs(servers)

	for _, s := range servers[:2] {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	_, errw, done := startTimed(t, bin, "lock", "--nodes", nodes, "--ttl", "2s", "back", "--", "true")
	waitLine(t, errw, `waiting for "back": `, 5*time.Second)
	for _, s := range servers[:2] {
		if err := s.Restart(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	waitLine(t, errw, `nodes answer again, enough for a lock`, 10*time.Second)
	exitsZero(t, done, errw, " after the nodes came back")

	qc, err := quorum.Dial(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer qc.Close()
	m, _ := qc.Mutex("held")
	lease, err := m.TryLock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(context.Background())
	for _, args := range [][]string{{"--try"}, {"--wait", "300ms"}} {
		code, out, stderr := runBin(t, bin, []string{"QUORUMLOCK_NODES="}, append(append([]string{"lock", "--nodes", nodes}, args...), "held", "--", "true")...)
		if code != exitNotObtained || !strings.Contains(stderr, "held by another owner on ") || strings.Contains(stderr, "waiting for") {
			t.Errorf("%v on a held lock: exit %d, want %d\n%s%s", args, code, exitNotObtained, out, stderr)
		}
	}
}
