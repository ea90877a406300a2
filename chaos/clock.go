package chaos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoFaketime says a real clock fault cannot be made on this machine.
var ErrNoFaketime = errors.New("chaos: clock faults need libfaketime and gcc: apt-get install libfaketime gcc, or set QUORUMLOCK_LIBFAKETIME")

// FindLibfaketime returns the path of libfaketime.so.1 ($QUORUMLOCK_LIBFAKETIME,
// else the usual Debian and /usr/local places).
func FindLibfaketime() (string, error) {
	if p := os.Getenv("QUORUMLOCK_LIBFAKETIME"); p != "" {
		return p, nil
	}
	cands, _ := filepath.Glob("/usr/lib/*/faketime/libfaketime.so.1")
	cands = append(cands, "/usr/lib/faketime/libfaketime.so.1", "/usr/local/lib/faketime/libfaketime.so.1")
	for _, p := range cands {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", ErrNoFaketime
}

// ClockSupported reports whether real clock faults (ClockSkew) can run here:
// nil when libfaketime and a C compiler for the preload shim are present.
func ClockSupported() error {
	if _, err := FindLibfaketime(); err != nil {
		return err
	}
	if _, err := exec.LookPath(ccName()); err != nil {
		return fmt.Errorf("%w (no %s)", ErrNoFaketime, ccName())
	}
	return nil
}

func ccName() string {
	if cc := os.Getenv("CC"); cc != "" {
		return cc
	}
	return "gcc"
}

// The preload shim. Debian's libfaketime 0.9.10 deadlocks redis-server at
// start: during its initialisation it looks up symbols that this glibc does
// not have (__ftime, __time, timer_[gs]ettime@GLIBC_2.2) and opens a POSIX
// semaphore; the failed lookups and sem_open allocate, redis' jemalloc asks
// the clock while initialising, libfaketime is not ready yet, and the
// process hangs. Loaded after libfaketime, this shim gives those lookups
// something to find and makes sem_open fail fast (libfaketime then runs
// without its shared-memory mode, which we do not use). Its functions read
// the real clock with raw system calls, never through libfaketime.
const shimSource = `#define _GNU_SOURCE
#include <errno.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/timeb.h>
#include <time.h>
#include <unistd.h>

static void raw_realtime(struct timespec *ts) { syscall(SYS_clock_gettime, CLOCK_REALTIME, ts); }

int __ftime(struct timeb *tb) {
	struct timespec ts;
	raw_realtime(&ts);
	tb->time = ts.tv_sec;
	tb->millitm = (unsigned short)(ts.tv_nsec / 1000000);
	tb->timezone = 0;
	tb->dstflag = 0;
	return 0;
}

time_t __time(time_t *t) {
	struct timespec ts;
	raw_realtime(&ts);
	if (t) *t = ts.tv_sec;
	return ts.tv_sec;
}

int quorumlock_timer_settime(timer_t id, int flags, const struct itimerspec *v, struct itimerspec *ov) {
	return (int)syscall(SYS_timer_settime, (int)(intptr_t)id, flags, v, ov);
}
int quorumlock_timer_gettime(timer_t id, struct itimerspec *v) {
	return (int)syscall(SYS_timer_gettime, (int)(intptr_t)id, v);
}
__asm__(".symver quorumlock_timer_settime,timer_settime@GLIBC_2.2");
__asm__(".symver quorumlock_timer_gettime,timer_gettime@GLIBC_2.2");

sem_t *sem_open(const char *name, int oflag, ...) {
	(void)name;
	(void)oflag;
	errno = ENOSYS;
	return SEM_FAILED;
}
`

// The version script gives the timer functions the old version libfaketime
// asks for, and sem_open the version libfaketime links against.
const shimVersions = `GLIBC_2.2 { global: timer_settime; timer_gettime; };
GLIBC_2.34 { global: sem_open; };
`

// BuildFaketimeShim compiles the preload shim into dir and returns its path.
func BuildFaketimeShim(ctx context.Context, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "faketime_shim.c")
	ver := filepath.Join(dir, "faketime_shim.map")
	out := filepath.Join(dir, "faketime_shim.so")
	if err := os.WriteFile(src, []byte(shimSource), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(ver, []byte(shimVersions), 0o644); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, ccName(), "-shared", "-fPIC", "-O2", "-o", out, src, "-Wl,--version-script="+ver)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("chaos: build faketime shim: %w: %s", err, b)
	}
	return out, nil
}

func (c *Cluster) faketimeShim(ctx context.Context) (string, error) {
	c.shimOnce.Do(func() {
		if err := ClockSupported(); err != nil {
			c.shimErr = err
			return
		}
		c.shim, c.shimErr = BuildFaketimeShim(ctx, filepath.Join(c.dir, "faketime"))
	})
	return c.shim, c.shimErr
}

// FaketimeSpec formats a libfaketime FAKETIME value: an offset from the real
// clock and a rate ("+3600 x2"). Rate 0 means 1.
func FaketimeSpec(offset time.Duration, rate float64) string {
	s := strconv.FormatFloat(offset.Seconds(), 'f', -1, 64)
	if offset >= 0 {
		s = "+" + s
	}
	if rate != 0 && rate != 1 {
		s += " x" + strconv.FormatFloat(rate, 'f', -1, 64)
	}
	return s
}

// ClockSkew runs a node's clock wrong for real, under libfaketime: Offset
// jumps it (forward when positive) and Rate makes it run fast (2) or slow
// (0.5). Only the wall clock is faked, as an NTP step or a bad oscillator
// would do to what Redis uses for expiry: a key with PX 2000 on a node at
// rate 2 expires after about 1 s.
//
// libfaketime takes its setting when the process starts, so Inject and
// Recover each restart the node (SAVE first, so the keys and their absolute
// expiry times survive even without persistence): the node also gets a new
// run id and drops its connections, which restart detection will notice.
// Keys written during a forward jump keep their far expiry after Recover, as
// they would when NTP steps a clock back. Local backend only.
type ClockSkew struct {
	Node   *Node
	Offset time.Duration
	Rate   float64

	mu         sync.Mutex
	orig       []string
	on         bool
	wasRunning bool
}

func (f *ClockSkew) String() string {
	return "clock(" + f.Node.Name() + "," + skewLabel(f.Offset, f.Rate) + ")"
}

func skewLabel(offset time.Duration, rate float64) string {
	var parts []string
	if offset != 0 || rate == 0 || rate == 1 {
		s := offset.String()
		if offset >= 0 {
			s = "+" + s
		}
		parts = append(parts, s)
	}
	if rate != 0 && rate != 1 {
		parts = append(parts, "x"+strconv.FormatFloat(rate, 'f', -1, 64))
	}
	return strings.Join(parts, ",")
}

// Inject restarts the node under the skewed clock.
func (f *ClockSkew) Inject(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.Node.Server()
	if s == nil {
		return fmt.Errorf("%w: clock faults need a local node, %s is not", ErrUnsupported, f.Node.Name())
	}
	if f.on {
		return fmt.Errorf("chaos: %v injected twice", f)
	}
	shim, err := f.Node.c.faketimeShim(ctx)
	if err != nil {
		return err
	}
	lib, err := FindLibfaketime()
	if err != nil {
		return err
	}
	f.orig = s.Config().Env
	env := append(append([]string(nil), f.orig...),
		"LD_PRELOAD="+lib+":"+shim,
		"FAKETIME="+FaketimeSpec(f.Offset, f.Rate),
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	)
	// From here on Recover has something to undo, even if the restart fails.
	f.on, f.wasRunning = true, s.Running()
	return f.Node.restartWithEnv(ctx, env, false)
}

// Recover restarts the node on the real clock (also when Inject's restart
// failed and left it down).
func (f *ClockSkew) Recover(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on {
		return nil
	}
	if err := f.Node.restartWithEnv(ctx, f.orig, f.wasRunning); err != nil {
		return err
	}
	f.on = false
	return nil
}

// restartWithEnv saves the dataset, kills the node and starts it again with
// env. A node that is down only gets the new environment for its next
// restart (another fault killed it), unless start says to bring it up.
func (n *Node) restartWithEnv(ctx context.Context, env []string, start bool) error {
	s := n.server
	if !s.Running() {
		s.SetEnv(env)
		if start {
			return n.restart(ctx)
		}
		return nil
	}
	if err := n.Admin().Save(ctx).Err(); err != nil {
		return fmt.Errorf("chaos: SAVE on %s before its clock restart: %w", n.name, err)
	}
	if err := s.Kill(); err != nil {
		return err
	}
	s.SetEnv(env)
	return n.restart(ctx)
}

// EmulatedClockSkew emulates a wrong clock on a node without touching the
// process: it rewrites the PTTL of the keys matching Match (e.g. "lock:*")
// as a clock that jumped by Jump and runs at Rate would make them expire. At
// Inject every matching key loses Jump; then, while injected, every Tick
// each one loses (Rate−1)·Tick (or gains, for Rate < 1). Keys whose time is
// up are deleted. Recover stops the ticking; lost time is not given back. It
// works through the admin connection on any backend. Each rewrite is one
// Lua call, so a key is never set back to a TTL it no longer has.
type EmulatedClockSkew struct {
	Node  *Node
	Match string        // SCAN MATCH pattern; "" means every key
	Jump  time.Duration // subtracted once at Inject
	Rate  float64       // 0 or 1: no drift
	Tick  time.Duration // 0 means 100 ms

	mu   sync.Mutex
	stop chan struct{}
	done chan error
}

func (f *EmulatedClockSkew) String() string {
	return "clock-emulated(" + f.Node.Name() + "," + skewLabel(f.Jump, f.Rate) + ")"
}

var shortenScript = redis.NewScript(`
-- ARGV[1]: milliseconds to take from each key's remaining TTL (negative adds).
local d = tonumber(ARGV[1])
local n = 0
for _, k in ipairs(KEYS) do
  local p = redis.call('PTTL', k)
  -- p < 0: no key, or no expiry; leave it alone.
  if p > 0 then
    local left = p - d
    if left < 1 then
      -- its time is up on the emulated clock
      redis.call('DEL', k)
    else
      redis.call('PEXPIRE', k, left)
    end
    n = n + 1
  end
end
return n
`)

// Shorten takes d from the TTL of every key matching match on n (through the
// admin client) and returns how many keys it changed.
func Shorten(ctx context.Context, n *Node, match string, d time.Duration) (int, error) {
	if match == "" {
		match = "*"
	}
	ms := d.Milliseconds()
	if ms == 0 {
		return 0, nil
	}
	rc := n.Admin()
	total := 0
	var cursor uint64
	for {
		keys, next, err := rc.Scan(ctx, cursor, match, 256).Result()
		if err != nil {
			return total, err
		}
		if len(keys) > 0 {
			k, err := shortenScript.Run(ctx, rc, keys, ms).Int()
			if err != nil {
				return total, err
			}
			total += k
		}
		if cursor = next; cursor == 0 {
			return total, nil
		}
	}
}

// Inject applies the jump and starts the drift.
func (f *EmulatedClockSkew) Inject(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop != nil {
		return fmt.Errorf("chaos: %v injected twice", f)
	}
	if _, err := Shorten(ctx, f.Node, f.Match, f.Jump); err != nil {
		return err
	}
	if f.Rate == 0 || f.Rate == 1 {
		return nil
	}
	tick := f.Tick
	if tick <= 0 {
		tick = 100 * time.Millisecond
	}
	per := time.Duration(math.Round(float64(tick) * (f.Rate - 1)))
	f.stop, f.done = make(chan struct{}), make(chan error, 1)
	stop, done := f.stop, f.done
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		var last error
		for {
			select {
			case <-stop:
				done <- last
				return
			case <-t.C:
				cctx, cancel := context.WithTimeout(context.Background(), tick)
				_, err := Shorten(cctx, f.Node, f.Match, per)
				cancel()
				if err != nil {
					last = err // the node may be partitioned or down; keep going
				}
			}
		}
	}()
	return nil
}

// Recover stops the drift.
func (f *EmulatedClockSkew) Recover(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop == nil {
		return nil
	}
	close(f.stop)
	<-f.done
	f.stop, f.done = nil, nil
	return nil
}
