package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// buildCLI builds the quorumlock binary into a test directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool not in PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "quorumlock")
	out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// lockCmd is one `quorumlock lock` process.
type lockCmd struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	code           int
}

func startLock(t *testing.T, bin, nodes string, args ...string) *lockCmd {
	t.Helper()
	lc := &lockCmd{done: make(chan struct{})}
	lc.cmd = exec.Command(bin, append([]string{"lock", "--nodes", nodes}, args...)...)
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

func (lc *lockCmd) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-lc.done:
		return lc.code
	case <-time.After(d):
		t.Fatalf("quorumlock lock still running after %v; stderr: %s", d, lc.stderr.String())
		return -1
	}
}

func waitFile(t *testing.T, path, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q (has %q)", path, want, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// quorumlock lock holds the lock while its command runs: a second lock on
// the same name waits until the first command has finished; exit codes pass
// through; --try and --wait give up with 75; a lost lease stops the command
// (its whole process group) and exits 70.
func TestLockCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	servers := localredis.StartNT(t, 3, localredis.Config{})
	nodes := testutil.URLs(servers)
	bin := buildCLI(t)
	dir := t.TempDir()

	t.Run("second waits for the first", func(t *testing.T) {
		log := filepath.Join(dir, "order.log")
		a := startLock(t, bin, nodes, "--ttl", "1s", "job", "--", "sh", "-c",
			`echo "A start $QUORUMLOCK_LOCK" >> `+log+`; sleep 1.5; echo "A end" >> `+log)
		waitFile(t, log, "A start job", 10*time.Second)
		b := startLock(t, bin, nodes, "job", "--", "sh", "-c", `echo "B ran" >> `+log)
		if code := a.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("first lock exited %d: %s", code, a.stderr.String())
		}
		if code := b.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("second lock exited %d: %s", code, b.stderr.String())
		}
		got, _ := os.ReadFile(log)
		if want := "A start job\nA end\nB ran\n"; string(got) != want {
			t.Fatalf("order of events:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("exit code and fencing token pass through", func(t *testing.T) {
		out := filepath.Join(dir, "token")
		c := startLock(t, bin, nodes, "--fencing", "code", "--", "sh", "-c", `echo $QUORUMLOCK_TOKEN > `+out+`; exit 7`)
		if code := c.wait(t, 20*time.Second); code != 7 {
			t.Fatalf("exit %d, want the command's 7; stderr: %s", code, c.stderr.String())
		}
		b, _ := os.ReadFile(out)
		if tok, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || tok < 1 {
			t.Fatalf("QUORUMLOCK_TOKEN = %q", b)
		}
	})

	t.Run("try and wait give up", func(t *testing.T) {
		flag := filepath.Join(dir, "held")
		h := startLock(t, bin, nodes, "busy", "--", "sh", "-c", `touch `+flag+`; sleep 30`)
		waitFile(t, flag, "", 10*time.Second)
		for _, args := range [][]string{{"--try"}, {"--wait", "300ms"}} {
			c := startLock(t, bin, nodes, append(args, "busy", "--", "true")...)
			if code := c.wait(t, 20*time.Second); code != exitNotObtained {
				t.Fatalf("%v on a held lock exited %d, want %d; stderr: %s", args, code, exitNotObtained, c.stderr.String())
			}
			if !strings.Contains(c.stderr.String(), "not obtained") {
				t.Errorf("%v: stderr does not say why: %s", args, c.stderr.String())
			}
		}
		_ = h.cmd.Process.Signal(syscall.SIGTERM) // stops its command, unlocks
		if code := h.wait(t, 20*time.Second); code != 128+int(syscall.SIGTERM) {
			t.Fatalf("interrupted lock exited %d, want %d; stderr: %s", code, 128+int(syscall.SIGTERM), h.stderr.String())
		}
		c := startLock(t, bin, nodes, "--try", "busy", "--", "true")
		if code := c.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("lock not free after the holder was interrupted: exit %d: %s", code, c.stderr.String())
		}
	})

	t.Run("lost lease stops the command", func(t *testing.T) {
		pidFile := filepath.Join(dir, "pid")
		// The shell starts a child that ignores nothing special; stopping
		// must reach it through the process group.
		c := startLock(t, bin, nodes, "--ttl", "900ms", "--grace", "500ms", "doomed", "--", "sh", "-c",
			`sleep 60 & echo $! > `+pidFile+`; wait`)
		waitFile(t, pidFile, "\n", 10*time.Second)
		b, _ := os.ReadFile(pidFile)
		child, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		qc, err := quorum.Dial(nodes)
		if err != nil {
			t.Fatal(err)
		}
		defer qc.Close()
		// Remove the lock under the holder: its next renewal finds a quorum
		// saying it is not held.
		if _, err := qc.Admin().ForceUnlock(context.Background(), "doomed", "lock test"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if code := c.wait(t, 20*time.Second); code != exitLeaseLost {
			t.Fatalf("exit %d, want %d; stderr: %s", code, exitLeaseLost, c.stderr.String())
		}
		t.Logf("command stopped %v after the lock was removed", time.Since(start).Round(time.Millisecond))
		if !strings.Contains(c.stderr.String(), "lost") {
			t.Errorf("stderr does not say the lease was lost: %s", c.stderr.String())
		}
		// The shell's child is gone too.
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(child, 0) == nil {
			if time.Now().After(deadline) {
				_ = syscall.Kill(child, syscall.SIGKILL)
				t.Fatalf("the command's child %d survived the lost lease", child)
			}
			time.Sleep(20 * time.Millisecond) // poll: another process's exit has no event to wait on here
		}
	})

	t.Run("nodes as URLs with AUTH, DB and TLS", func(t *testing.T) {
		secure := secureNodes(t, 3, "s3cret")
		flag := filepath.Join(dir, "secure")
		c := startLock(t, bin, secure.urls, "tls-job", "--", "sh", "-c", `touch `+flag+`; sleep 1`)
		waitFile(t, flag, "", 10*time.Second)
		// While the command runs, the lock key is in DB 3 of a majority of
		// the nodes (a slow TLS handshake may leave one out), reached
		// through TLS with the password.
		holding := 0
		for _, s := range secure.servers {
			rc := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "s3cret", DB: 3})
			n, err := rc.Exists(context.Background(), "quorumlock:{tls-job}").Result()
			rc.Close()
			if err != nil {
				t.Fatalf("node %s: %v", s.Addr(), err)
			}
			holding += int(n)
		}
		if holding < 2 {
			t.Errorf("lock key in DB 3 of %d of 3 nodes, want a majority", holding)
		}
		if code := c.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("exit %d: %s", code, c.stderr.String())
		}
		// A wrong password fails with a message that does not print it.
		bad := strings.ReplaceAll(secure.urls, "s3cret", "wrong-pw")
		w := startLock(t, bin, bad, "--try", "tls-job", "--", "true")
		if code := w.wait(t, 20*time.Second); code == 0 {
			t.Fatal("lock with a wrong password succeeded")
		}
		if strings.Contains(w.stderr.String(), "wrong-pw") {
			t.Errorf("the password is printed: %s", w.stderr.String())
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{{}, {"name-only"}} {
			c := startLock(t, bin, nodes, args...)
			if code := c.wait(t, 20*time.Second); code != 2 {
				t.Fatalf("%v exited %d, want 2", args, code)
			}
		}
	})
}

type secure struct {
	servers []*localredis.Server
	urls    string // rediss://:password@host:tlsport/3?skip_verify=true,...
}

// secureNodes starts n servers that require a password and also listen
// for TLS (a self-signed certificate) on a second port.
func secureNodes(t *testing.T, n int, password string) secure {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	out := secure{servers: localredis.StartNT(t, n, localredis.Config{})}
	var urls []string
	ctx := context.Background()
	for _, s := range out.servers {
		port, err := localredis.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		rc := s.Client()
		for _, kv := range [][2]string{
			{"tls-cert-file", certFile}, {"tls-key-file", keyFile}, {"tls-ca-cert-file", certFile},
			{"tls-auth-clients", "no"}, {"tls-port", strconv.Itoa(port)}, {"requirepass", password},
		} {
			if err := rc.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
				rc.Close()
				t.Fatalf("CONFIG SET %s: %v", kv[0], err)
			}
		}
		rc.Close()
		urls = append(urls, "rediss://:"+password+"@127.0.0.1:"+strconv.Itoa(port)+"/3?skip_verify=true")
	}
	out.urls = strings.Join(urls, ",")
	return out
}
