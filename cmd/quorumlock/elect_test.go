package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// startElect runs `quorumlock elect --nodes nodes args...`.
func startElect(t *testing.T, bin, nodes string, args ...string) *lockCmd {
	t.Helper()
	lc := &lockCmd{done: make(chan struct{})}
	lc.cmd = exec.Command(bin, append([]string{"elect", "--nodes", nodes}, args...)...)
	lc.cmd.Stdout, lc.cmd.Stderr = &lc.stdout, &lc.stderr
	if err := lc.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = lc.cmd.Process.Kill()
		<-lc.done
	})
	go func() {
		lc.code = exitCode(lc.cmd.Wait(), -1)
		close(lc.done)
	}()
	return lc
}

// quorumlock elect runs its command only while leader: a second campaigner
// runs after the first command exits, with a higher term; leader shows the
// leader and then "no leader"; the command's exit code passes through; a
// forced loss of leadership stops the command (SIGKILL after --grace when
// it ignores SIGTERM) and exits 70.
func TestElectAndLeaderCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	servers := localredis.StartNT(t, 3, localredis.Config{})
	nodes := testutil.URLs(servers)
	bin := buildCLI(t)
	dir := t.TempDir()
	env := []string{"QUORUMLOCK_NODES="}

	t.Run("one leader at a time, terms increase", func(t *testing.T) {
		log := filepath.Join(dir, "order.log")
		a := startElect(t, bin, nodes, "--value", "A", "sched", "--", "sh", "-c",
			`echo "A $QUORUMLOCK_ELECTION $QUORUMLOCK_TERM" >> `+log+`; sleep 1.5; echo "A end" >> `+log+`; exit 3`)
		waitFile(t, log, "A sched", 10*time.Second)
		code, out, stderr := runBin(t, bin, env, "leader", "--nodes", nodes, "sched")
		if code != 0 || !strings.Contains(out, `leader "A", term `) {
			t.Errorf("leader while A leads: exit %d: %s%s", code, out, stderr)
		}
		b := startElect(t, bin, nodes, "--value", "B", "sched", "--", "sh", "-c", `echo "B $QUORUMLOCK_TERM" >> `+log)
		if code := a.wait(t, 20*time.Second); code != 3 {
			t.Fatalf("A exited %d, want its command's 3; stderr: %s", code, a.stderr.String())
		}
		if code := b.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("B exited %d; stderr: %s", code, b.stderr.String())
		}
		got, _ := os.ReadFile(log)
		lines := strings.Split(strings.TrimSpace(string(got)), "\n")
		if len(lines) != 3 || lines[1] != "A end" || !strings.HasPrefix(lines[2], "B ") {
			t.Fatalf("order:\n%s", got)
		}
		ta, _ := strconv.Atoi(strings.Fields(lines[0])[2])
		tb, _ := strconv.Atoi(strings.Fields(lines[2])[1])
		if ta <= 0 || tb <= ta {
			t.Errorf("terms A %d, B %d: want positive and increasing", ta, tb)
		}
		code, out, _ = runBin(t, bin, env, "leader", "--nodes", nodes, "sched")
		if code != 0 || !strings.Contains(out, "sched: no leader") {
			t.Errorf("leader after both: exit %d: %s", code, out)
		}
	})

	t.Run("forced loss stops the command", func(t *testing.T) {
		flag := filepath.Join(dir, "doomed")
		c := startElect(t, bin, nodes, "--ttl", "900ms", "--grace", "300ms", "doomed", "--", "sh", "-c",
			`trap "" TERM; touch `+flag+`; while :; do sleep 0.1; done`)
		waitFile(t, flag, "", 10*time.Second)
		qc, err := quorum.Dial(nodes)
		if err != nil {
			t.Fatal(err)
		}
		defer qc.Close()
		if _, err := qc.Admin().ForceUnlock(context.Background(), quorum.ElectionPrefix+"doomed", "elect test"); err != nil {
			t.Fatal(err)
		}
		if code := c.wait(t, 20*time.Second); code != exitLeaseLost {
			t.Fatalf("exit %d, want %d; stderr: %s", code, exitLeaseLost, c.stderr.String())
		}
		if !strings.Contains(c.stderr.String(), "leadership of \"doomed\" lost") {
			t.Errorf("stderr does not say leadership was lost: %s", c.stderr.String())
		}
		for _, l := range strings.Split(strings.TrimSpace(c.stderr.String()), "\n") {
			if doubledPrefix(l) {
				t.Errorf("prefix doubled: %s", l)
			}
		}
	})

	t.Run("watch and usage", func(t *testing.T) {
		w := exec.Command(bin, "leader", "--watch", "--nodes", nodes, "watched")
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.Stdout = pw
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		defer func() { _ = w.Process.Kill(); _ = w.Wait() }()
		lines := make(chan string, 16)
		go func() {
			buf := make([]byte, 4096)
			var acc string
			for {
				n, err := pr.Read(buf)
				acc += string(buf[:n])
				for {
					i := strings.IndexByte(acc, '\n')
					if i < 0 {
						break
					}
					lines <- acc[:i]
					acc = acc[i+1:]
				}
				if err != nil {
					close(lines)
					return
				}
			}
		}()
		expect := func(want string) {
			t.Helper()
			select {
			case l := <-lines:
				if !strings.Contains(l, want) {
					t.Fatalf("watch printed %q, want %q", l, want)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("watch printed nothing; want %q", want)
			}
		}
		expect("watched: no leader")
		e := startElect(t, bin, nodes, "--value", "W", "watched", "--", "sleep", "0.5")
		expect(`watched: leader "W"`)
		if code := e.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("elect exited %d: %s", code, e.stderr.String())
		}
		expect("watched: no leader")

		for _, args := range [][]string{{"elect", "x"}, {"elect"}, {"elect", "--grace", "-1s", "x", "true"}, {"leader"}} {
			if code, _, stderr := runBin(t, bin, env, args...); code != exitUsage {
				t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, stderr)
			}
		}
	})
}
