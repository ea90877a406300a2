package localredis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/quorumlock/quorumlock/internal/lockkeys"
)

// Persistence selects how a server keeps its data across a restart.
type Persistence int

const (
	// DefaultPersistence (the zero value) is AOFAlways, with the data
	// directory on tmpfs (/dev/shm) when one is there and Config.Dir is
	// empty: fsync costs nothing there, and the quorum client's restart
	// detection, on by default for nodes without fsync-always AOF, lets
	// such a node vote at once. (tmpfs loses the data with the machine,
	// which a test does not mind; Kill keeps it, as AOF on disk would.)
	DefaultPersistence Persistence = iota
	// NoPersistence: no RDB snapshots, no AOF. A restart starts empty.
	NoPersistence
	// AOF: append-only file with appendfsync everysec (Redis' default AOF mode).
	AOF
	// AOFAlways: append-only file fsynced on every write; what fencing
	// counters need to survive a crash.
	AOFAlways
)

func (p Persistence) String() string {
	switch p {
	case DefaultPersistence:
		return "default (aof-always)"
	case NoPersistence:
		return "none"
	case AOF:
		return "aof-everysec"
	case AOFAlways:
		return "aof-always"
	}
	return "Persistence(" + strconv.Itoa(int(p)) + ")"
}

// Config describes one server. The zero value is a standalone master with
// fsync-always AOF (DefaultPersistence).
type Config struct {
	// Persistence defaults to DefaultPersistence (AOFAlways on tmpfs when
	// available); NoPersistence makes a server that restarts empty.
	Persistence Persistence
	// ReplicaOf is "host:port" of a master to replicate from; empty for a master.
	ReplicaOf string
	// Extra holds further config directives, each as "name value"
	// (e.g. "maxmemory-policy allkeys-lru").
	Extra []string
	// Bin is the redis-server binary; empty means Find().
	Bin string
	// Dir is the data directory; empty means a new temporary directory that
	// Stop removes (under /dev/shm when it exists, else the system's
	// temporary directory).
	Dir string
	// Env is added to the server's environment (e.g. LD_PRELOAD for clock faults).
	Env []string
	// Port to listen on; 0 picks a free loopback port.
	Port int
	// ConfigFile, when set, is passed as the first argument, before the
	// command-line directives (which override it). redis-sentinel needs one:
	// it saves its state there.
	ConfigFile string
}

// ErrNotInstalled says redis-server could not be found.
var ErrNotInstalled = errors.New("quorumlock: redis-server not found in PATH; install the Debian package 'redis-server' (apt-get install redis-server) or set QUORUMLOCK_REDIS_SERVER")

// Find returns the path of the redis-server binary: $QUORUMLOCK_REDIS_SERVER
// if set, else the one on PATH.
func Find() (string, error) {
	return findBinary("QUORUMLOCK_REDIS_SERVER", "redis-server", ErrNotInstalled)
}

// findBinary returns $env if set, else name found on PATH, else notFound.
func findBinary(env, name string, notFound error) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", notFound
	}
	return p, nil
}

// Server is one running (or stopped) redis-server process that this package
// started. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	port    int
	dir     string
	tempDir bool

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool
	paused  bool
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tmpfsDir is where new data directories go: /dev/shm when it is a
// writable directory (a tmpfs on Linux), else "" (the system's temporary
// directory).
func tmpfsDir() string {
	const shm = "/dev/shm"
	if fi, err := os.Stat(shm); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp(shm, ".quorumlock-probe-*"); err == nil {
			name := f.Name()
			_ = f.Close()
			_ = os.Remove(name)
			return shm
		}
	}
	return ""
}

// pickPort is FreePort; tests replace it to hand out a port in use.
var pickPort = FreePort

// Start launches a server and waits until it answers PING. The context bounds
// the wait, not the server's life: call Stop (or Kill) to end it.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Bin == "" {
		bin, err := Find()
		if err != nil {
			return nil, err
		}
		cfg.Bin = bin
	}
	s := &Server{cfg: cfg, dir: cfg.Dir}
	if s.dir == "" {
		d, err := os.MkdirTemp(tmpfsDir(), "quorumlock-redis-*")
		if err != nil {
			return nil, err
		}
		s.dir, s.tempDir = d, true
	}
	// A free port can be taken between asking and binding; try a few.
	var lastErr error
	for try := 0; try < 5; try++ {
		s.port = cfg.Port
		if s.port == 0 {
			p, err := pickPort()
			if err != nil {
				return nil, err
			}
			s.port = p
		}
		if lastErr = s.launch(ctx); lastErr == nil {
			return s, nil
		}
		if cfg.Port != 0 || ctx.Err() != nil {
			break
		}
	}
	s.removeDir()
	return nil, lastErr
}

func (s *Server) args(cfg Config) []string {
	var a []string
	if cfg.ConfigFile != "" {
		a = append(a, cfg.ConfigFile)
	}
	a = append(a,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--dir", s.dir,
		"--logfile", filepath.Join(s.dir, "redis.log"),
		"--save", "",
		"--repl-diskless-sync-delay", "0",
		"--dbfilename", "dump.rdb",
		"--appendfilename", "appendonly.aof",
	)
	switch cfg.Persistence {
	case NoPersistence:
		a = append(a, "--appendonly", "no")
	case AOF:
		a = append(a, "--appendonly", "yes", "--appendfsync", "everysec")
	case AOFAlways, DefaultPersistence:
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	}
	if cfg.ReplicaOf != "" {
		host, port, err := net.SplitHostPort(cfg.ReplicaOf)
		if err == nil {
			a = append(a, "--replicaof", host, port)
		}
	}
	for _, e := range cfg.Extra {
		name, val, _ := strings.Cut(strings.TrimSpace(e), " ")
		a = append(a, "--"+name)
		if val != "" {
			a = append(a, strings.Fields(val)...)
		}
	}
	return a
}

func (s *Server) launch(ctx context.Context) error {
	cfg := s.Config()
	cmd := exec.Command(cfg.Bin, s.args(cfg)...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Dir = s.dir
	// Own process group so a terminal's ^C does not hit it before we do, and
	// a parent death kills it instead of leaving an orphan on the port.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("quorumlock: start %s: %w", cfg.Bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited, s.stopped, s.paused = cmd, exited, false, false
	s.mu.Unlock()
	if err := s.waitReady(ctx, cmd.Process.Pid, exited); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		return err
	}
	return nil
}

// waitReady waits until the server answers on its port and proves it is
// ours: INFO server's process_id is pid. Another server can answer on the
// same port: two servers started at once may be handed the same free port by
// the kernel, and the one that loses the bind exits with "address in use"
// only after the winner answered its PING. Taking any answer as ours would leave two
// Servers sharing one address, so the loser waits for its own process,
// sees it exit, and Start tries another port.
func (s *Server) waitReady(ctx context.Context, pid int, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
	defer c.Close()
	for {
		select {
		case <-exited:
			return fmt.Errorf("quorumlock: redis-server on port %d exited at start: %s", s.port, s.logTail(5))
		default:
		}
		pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		answered, err := serverPID(pctx, c)
		pcancel()
		if err == nil && answered == pid {
			return nil
		}
		if err == nil {
			// Someone else's server on this port: ours cannot bind it and
			// will exit; keep waiting for that (or for the port to be ours).
			err = fmt.Errorf("port %d answered by process %d, not ours (%d)", s.port, answered, pid)
		}
		// Loading the AOF at start answers LOADING; keep waiting.
		select {
		case <-ctx.Done():
			return fmt.Errorf("quorumlock: redis-server on port %d not ready: %w (log: %s)", s.port, err, s.logTail(5))
		case <-exited:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// serverPID is the process_id that INFO server reports.
func serverPID(ctx context.Context, c *redis.Client) (int, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

func (s *Server) logTail(n int) string {
	f, err := os.Open(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, " | ")
}

// Addr is "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port is the TCP port the server listens on (kept across restarts).
func (s *Server) Port() int { return s.port }

// Dir is the server's data directory.
func (s *Server) Dir() string { return s.dir }

// Config returns the configuration the server was started with.
func (s *Server) Config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// PID is the process id of the running server, or 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return 0
	}
	return s.cmd.Process.Pid
}

// Running reports whether the process is alive (paused counts as alive).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Options returns go-redis options for this server with the settings a lock
// needs: context deadlines honoured, no hidden retries.
func (s *Server) Options() *redis.Options { return ClientOptions(s.Addr()) }

// ClientOptions returns go-redis options for addr with the settings a lock
// needs: context deadlines honoured (ContextTimeoutEnabled), no hidden retries
// (MaxRetries -1: a retried acquire after a lost reply would see its own key),
// a short dial timeout, and one dial attempt (go-redis otherwise dials 5 times
// 100 ms apart, so a refused node costs 400 ms instead of failing at once).
// It is the one place these settings live; callers that talk to a node
// through something else (a proxy) start from here too.
func ClientOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           time.Second,
		DialerRetries:         1,
		DialerRetryTimeout:    time.Microsecond, // see node.Options
		// Off: Redis before 8 refuses CLIENT MAINT_NOTIFICATIONS on every
		// new connection, and go-redis' auto mode then rewrites the shared
		// options, racing with the batcher's redis.Conn (the lane).
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// Client returns a new go-redis client for this server (caller closes it).
func (s *Server) Client() *redis.Client { return redis.NewClient(s.Options()) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return fmt.Errorf("quorumlock: server on port %d is not running", s.port)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("quorumlock: signal %v to pid %d: %w", sig, s.cmd.Process.Pid, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		s.paused = true
	case syscall.SIGCONT:
		s.paused = false
	}
	return nil
}

// Pause freezes the process (SIGSTOP): connections stay open, nothing answers.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT). Commands that clients queued on
// its sockets while it was paused execute now.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

// Paused reports whether Pause was called without a Resume.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused && !s.stopped
}

// Kill ends the process with SIGKILL (a crash) and waits for it to exit. The
// data directory is kept, so Restart can recover from AOF if it was on.
func (s *Server) Kill() error { return s.halt(syscall.SIGKILL) }

// Shutdown ends the process with SIGTERM (a clean stop) and waits for it.
func (s *Server) Shutdown() error { return s.halt(syscall.SIGTERM) }

func (s *Server) halt(sig syscall.Signal) error {
	s.mu.Lock()
	if s.cmd == nil || s.stopped {
		s.mu.Unlock()
		return nil
	}
	p, exited := s.cmd.Process, s.exited
	wasPaused := s.paused
	s.stopped = true
	s.paused = false
	s.mu.Unlock()
	_ = p.Signal(sig)
	if wasPaused && sig != syscall.SIGKILL {
		_ = p.Signal(syscall.SIGCONT)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = p.Kill()
		<-exited
	}
	return nil
}

// WipeData removes the data files (RDB and AOF), as a power loss would lose
// writes that were only in the page cache. Call it while the server is stopped.
func (s *Server) WipeData() error {
	if s.Running() {
		return fmt.Errorf("quorumlock: WipeData on a running server (port %d); Kill it first", s.port)
	}
	for _, name := range []string{"dump.rdb", "appendonly.aof", "appendonlydir"} {
		if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// Restart starts the server again on the same port and data directory after
// Kill or Shutdown (it is an error while it runs).
func (s *Server) Restart(ctx context.Context) error {
	if s.Running() {
		return fmt.Errorf("quorumlock: Restart of a running server (port %d); Kill it first", s.port)
	}
	var err error
	// The port can linger briefly after a kill; retry for a moment.
	for try := 0; try < 20; try++ {
		if err = s.launch(ctx); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// SetEnv replaces the extra environment used by the next Restart (e.g. to
// start the server under libfaketime).
func (s *Server) SetEnv(env []string) {
	s.mu.Lock()
	s.cfg.Env = env
	s.mu.Unlock()
}

// SetReplicaOf replaces the master ("host:port", or "" for none) that the
// next Restart replicates from, e.g. after a failover swapped the roles.
func (s *Server) SetReplicaOf(addr string) {
	s.mu.Lock()
	s.cfg.ReplicaOf = addr
	s.mu.Unlock()
}

// Stop kills the process if it runs and removes a temporary data directory.
// It is safe to call more than once.
func (s *Server) Stop() error {
	err := s.Kill()
	s.removeDir()
	return err
}

func (s *Server) removeDir() {
	if s.tempDir {
		_ = os.RemoveAll(s.dir)
	}
}

// TB is the part of testing.TB the test helpers use.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// KeysWithoutExpiry lists the keys under the lock prefix ("quorumlock:")
// that have no TTL, except the counters meant to live forever (fencing and
// ticket counters): locks that would never be free again if their holder
// died.
func (s *Server) KeysWithoutExpiry(ctx context.Context) ([]string, error) {
	c := s.Client()
	defer c.Close()
	return lockkeys.WithoutExpiry(ctx, c, lockkeys.DefaultPrefix)
}

// CheckExpiry fails t when any of the servers that still answer holds a
// lock key without expiry (see KeysWithoutExpiry). The test helpers run it
// in t.Cleanup, after the test's own cleanups: every test checks the
// invariant that no script path leaves a lock that never expires. Servers
// stopped, killed or paused by the test are skipped.
func CheckExpiry(t TB, servers ...*Server) {
	t.Helper()
	for _, s := range servers {
		if s == nil || !s.Running() || s.Paused() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		keys, err := s.KeysWithoutExpiry(ctx)
		cancel()
		if err != nil {
			// Not answering (a fault the test left) is not this check's
			// business; a key found is.
			continue
		}
		if len(keys) > 0 {
			t.Errorf("quorumlock: %s holds lock keys without expiry (a lock that never frees itself): %q", s.Addr(), keys)
		}
	}
}

// Required reports whether a missing redis-server must fail tests instead of
// skipping them: true when QUORUMLOCK_REQUIRE_REDIS or CI is set.
func Required() bool {
	return os.Getenv("QUORUMLOCK_REQUIRE_REDIS") != "" || os.Getenv("CI") != ""
}

// StartT starts a server for a test and stops it in t.Cleanup. Without a
// redis-server binary the test is skipped, or failed when Required().
func StartT(t TB, cfg Config) *Server {
	t.Helper()
	if _, err := Find(); err != nil && cfg.Bin == "" {
		if Required() {
			t.Fatalf("%v", err)
		}
		t.Skipf("%v", err)
	}
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		CheckExpiry(t, s)
		_ = s.Stop()
	})
	return s
}

// StartNT starts n servers with the same config (in parallel) for a test.
func StartNT(t TB, n int, cfg Config) []*Server {
	t.Helper()
	out, err := StartN(context.Background(), n, cfg)
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && !Required() {
			t.Skipf("%v", err)
		}
		t.Fatalf("start redis-server: %v", err)
	}
	for _, s := range out {
		t.Cleanup(func() {
			CheckExpiry(t, s)
			_ = s.Stop()
		})
	}
	return out
}

// StartN starts n servers outside a test (demo, benchmarks). On error the ones
// already started are stopped.
func StartN(ctx context.Context, n int, cfg Config) ([]*Server, error) {
	out := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = Start(ctx, cfg)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		StopAll(out)
		return nil, err
	}
	return out, nil
}

// StopAll stops every non-nil server.
func StopAll(servers []*Server) {
	for _, s := range servers {
		if s != nil {
			_ = s.Stop()
		}
	}
}
