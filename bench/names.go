package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/adapters"
	"github.com/quorumlock/quorumlock/bench/internal/proc"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// namesCaseID is what -cases matches to select the many-names case.
const namesCaseID = "names"

// namesNodes is the quorum the case holds its locks on; the two servers
// after it hold redislock's locks and the fencing counters.
const namesNodes = 3

// namesPrefix starts every name the case locks; the listings match it.
const namesPrefix = "names/"

// namesLease is how long a held lock lasts: longer than the case, and a
// fixed lease time, so no watchdog renews a million leases meanwhile.
const namesLease = 30 * time.Minute

// NamesRow is the keyspace at one number of held locks. The names are
// added stage by stage (10³, 10⁴, …): each row holds every name of the
// rows before it too.
type NamesRow struct {
	Names int `json:"names"`
	// Server memory: INFO used_memory over the empty node's, per lock —
	// quorumlock's held locks on the first node of the quorum (fencing
	// off), redislock's held locks on a node of their own, and the
	// fencing counters that stay after a fenced lock's release (one-node
	// quorum, fencing on: locked and released at once).
	HeldBytes      float64 `json:"held_bytes_per_lock"`
	RedislockBytes float64 `json:"redislock_held_bytes_per_lock"`
	CounterBytes   float64 `json:"retained_counter_bytes_per_name"`
	// Client: Go heap in use per held lease, after a GC.
	ClientBytes float64 `json:"client_heap_bytes_per_lease"`
	// Filling: acquisitions per second by namesFillers goroutines.
	FillPerSec float64 `json:"fill_per_sec"`
	// Lock of a fresh name by one goroutine while these are held.
	LockP50us float64 `json:"lock_p50_us"`
	LockP99us float64 `json:"lock_p99_us"`
	// Listings of these names by separate processes: wall time, the
	// process's peak RSS, and the first line of its error ("" when it
	// listed what it should). CLI is quorumlock locks --match --limit 0
	// (every name, a page at a time), CLIPage its first page (the default
	// --limit), Console the console's first page of GET /api/locks.
	CLI     Listing `json:"cli_locks"`
	CLIPage Listing `json:"cli_locks_first_page"`
	Console Listing `json:"console_api_locks"`
}

// The listings' page sizes: the CLI's default --limit, the console's
// default limit.
const (
	cliPage     = 1000
	consolePage = 200
)

// Listing is one listing of the held names by a separate process.
type Listing struct {
	Seconds float64 `json:"seconds"`
	PeakMB  float64 `json:"peak_rss_mb"`
	Listed  int     `json:"listed"`
	Err     string  `json:"error,omitempty"`
}

// namesAttempt is the clients' attempt timeout: 64 goroutines filling on a
// machine shared with other work time out at the default now and then.
const namesAttempt = time.Second

const (
	namesFillers = 64
	namesProbes  = 2000 // Lock+Unlock of fresh names per row
	namesRounds  = 5    // … in this many rounds
)

// namesCase holds locks on counts[0], then counts[1], … distinct names,
// measuring each row, then releases them all. It starts servers of its
// own (stopped before it returns): memory deltas need nodes that nothing
// else used.
func namesCase(ctx context.Context, counts []int, cli string, log io.Writer) ([]NamesRow, error) {
	fmt.Fprintf(log, "names: starting %d redis-server nodes…\n", namesNodes+2)
	servers, err := localredis.StartN(ctx, namesNodes+2, localredis.Config{})
	if err != nil {
		return nil, err
	}
	defer localredis.StopAll(servers)
	quorumSrv, rlSrv, fenceSrv := servers[:namesNodes], servers[namesNodes], servers[namesNodes+1]
	used := append(slices.Clone(quorumSrv), rlSrv, fenceSrv)
	admins := make([]*redis.Client, len(used))
	for i, s := range used {
		admins[i] = s.Client()
		defer admins[i].Close()
	}
	if cli == "" {
		if cli, err = buildCLI(ctx, log); err != nil {
			return nil, err
		}
	}
	var nodeURLs []string
	for _, s := range quorumSrv {
		nodeURLs = append(nodeURLs, "redis://"+s.Addr())
	}

	qc, err := quorum.New(clientsOf(quorumSrv), quorum.WithFencing(false), quorum.WithAttemptTimeout(namesAttempt))
	if err != nil {
		return nil, err
	}
	defer qc.Close()
	fc, err := quorum.New(clientsOf([]*localredis.Server{fenceSrv}), quorum.WithFencing(true), quorum.WithAttemptTimeout(namesAttempt))
	if err != nil {
		return nil, err
	}
	defer fc.Close()
	rlClient := rlSrv.Client()
	defer rlClient.Close()
	rl, err := adapters.New([]redis.UniversalClient{rlClient}, adapters.Config{Kind: adapters.Redislock, TTL: namesLease})
	if err != nil {
		return nil, err
	}
	defer rl.Close()

	// The baseline: the clients connected and warm (their scripts loaded,
	// their connections open), no lock of the case held.
	if _, err := fill(ctx, 0, namesFillers, func(ctx context.Context, name string) (struct{}, error) {
		for _, lk := range []func() error{
			func() error { return lockRelease(ctx, qc, "warm/"+name) },
			func() error { return lockRelease(ctx, fc, "warm/"+name) },
		} {
			if err := lk(); err != nil {
				return struct{}{}, err
			}
		}
		m, err := rl.Mutex("warm/" + name)
		if err != nil {
			return struct{}{}, err
		}
		l, err := m.TryLock(ctx)
		if err != nil {
			return struct{}{}, err
		}
		if l.Unlock(ctx) != nil {
			unreleased.Add(1)
		}
		return struct{}{}, nil
	}); err != nil {
		return nil, fmt.Errorf("warming up: %w", err)
	}
	base := make([]int64, len(admins))
	for i, a := range admins {
		// The fencing counters of the warm-up stay: they are in the base.
		if base[i], err = usedMemory(ctx, a); err != nil {
			return nil, err
		}
	}
	var (
		held   []*quorum.Lease
		rlHeld []adapters.Lease
		rows   []NamesRow
	)
	runtime.GC()
	heap0 := heapInUse()
	from := 0
	for _, m := range counts {
		if m <= from {
			continue
		}
		start := time.Now()
		fmt.Fprintf(log, "names: holding %d names …", m)
		more, err := fill(ctx, from, m, func(ctx context.Context, name string) (*quorum.Lease, error) {
			mu, err := qc.Mutex(name, quorum.WithLeaseTime(namesLease))
			if err != nil {
				return nil, err
			}
			return mu.TryLock(ctx)
		})
		held = append(held, more...)
		if err != nil {
			return nil, fmt.Errorf("holding %d names: %w", m, err)
		}
		row := NamesRow{Names: m, FillPerSec: float64(m-from) / time.Since(start).Seconds()}
		rlMore, err := fill(ctx, from, m, func(ctx context.Context, name string) (adapters.Lease, error) {
			mu, err := rl.Mutex(name)
			if err != nil {
				return nil, err
			}
			return mu.TryLock(ctx)
		})
		rlHeld = append(rlHeld, rlMore...)
		if err != nil {
			return nil, fmt.Errorf("redislock, %d names: %w", m, err)
		}
		if _, err := fill(ctx, from, m, func(ctx context.Context, name string) (struct{}, error) {
			return struct{}{}, lockRelease(ctx, fc, name)
		}); err != nil {
			return nil, fmt.Errorf("fencing counters, %d names: %w", m, err)
		}
		from = m
		fmt.Fprintf(log, " %v; ", time.Since(start).Round(100*time.Millisecond))

		per := func(i int) (float64, error) {
			u, err := usedMemory(ctx, admins[i])
			return float64(u-base[i]) / float64(m), err
		}
		if row.HeldBytes, err = per(0); err != nil {
			return nil, err
		}
		if row.RedislockBytes, err = per(namesNodes); err != nil {
			return nil, err
		}
		if row.CounterBytes, err = per(namesNodes + 1); err != nil {
			return nil, err
		}
		runtime.GC()
		row.ClientBytes = float64(heapInUse()-heap0) / float64(len(held))

		fmt.Fprint(log, "probing …")
		if row.LockP50us, row.LockP99us, err = probeLocks(ctx, qc, m); err != nil {
			return nil, err
		}
		fmt.Fprint(log, " listing (CLI, all) …")
		row.CLI = listCLI(ctx, cli, nodeURLs, 0, m)
		fmt.Fprint(log, " listing (CLI, first page) …")
		row.CLIPage = listCLI(ctx, cli, nodeURLs, cliPage, min(m, cliPage))
		fmt.Fprint(log, " listing (console, first page) …")
		row.Console = listConsole(ctx, cli, nodeURLs, min(m, consolePage), m > consolePage)
		fmt.Fprintf(log, " done\n")
		rows = append(rows, row)
	}
	if n := unreleased.Load(); n > 0 {
		fmt.Fprintf(log, "names: %d of the locks taken and given back at once were not released (they count as held)\n", n)
	}
	// Release in bounded parallelism: Close would end them all at once.
	fmt.Fprintf(log, "names: releasing %d locks …\n", len(held))
	if _, err := fill(ctx, 0, len(held), func(ctx context.Context, name string) (struct{}, error) {
		i, _ := strconv.Atoi(strings.TrimPrefix(name, namesPrefix))
		err := held[i].Unlock(ctx)
		if errors.Is(err, quorum.ErrUnlocked) {
			// fill's retry of an Unlock that failed on some nodes:
			// what they kept expires with the lease.
			err = nil
		}
		return struct{}{}, err
	}); err != nil {
		// The rows stand; the servers stop in a moment anyway.
		fmt.Fprintf(log, "names: releasing: %v\n", err)
	}
	return rows, ctx.Err()
}

// unreleased counts lockRelease's Unlocks that failed (on a loaded
// machine a few time out): those locks stay until their lease ends.
var unreleased atomic.Int64

// lockRelease takes name once and gives it back. Only the acquisition's
// error is returned: fill tries a failed one again, and a lock whose
// release failed could not be taken again.
func lockRelease(ctx context.Context, c *quorum.Client, name string) error {
	m, err := c.Mutex(name, quorum.WithLeaseTime(namesLease))
	if err != nil {
		return err
	}
	l, err := m.TryLock(ctx)
	if err != nil {
		return err
	}
	if l.Unlock(ctx) != nil {
		unreleased.Add(1)
	}
	return nil
}

func clientsOf(servers []*localredis.Server) []redis.UniversalClient {
	var out []redis.UniversalClient
	for _, s := range servers {
		out = append(out, s.Client())
	}
	return out
}

// namesName is the i-th name of the case.
func namesName(i int) string { return namesPrefix + fmt.Sprintf("%07d", i) }

// fill calls acquire for the names from..to-1 with namesFillers goroutines
// and returns what it returned, in the names' order.
func fill[T any](ctx context.Context, from, to int, acquire func(context.Context, string) (T, error)) ([]T, error) {
	out := make([]T, to-from)
	var next atomic.Int64
	next.Store(int64(from))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range namesFillers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				// A loaded machine times some attempts out: try again,
				// a few times, before calling it a failure.
				v, err := acquire(ctx, namesName(i))
				for try := 1; err != nil && try < 10 && ctx.Err() == nil; try++ {
					time.Sleep(time.Duration(try) * 10 * time.Millisecond)
					v, err = acquire(ctx, namesName(i))
				}
				if err != nil {
					mu.Lock()
					first = cmpOr(first, fmt.Errorf("%s: %w", namesName(i), err))
					mu.Unlock()
					return
				}
				out[i-from] = v
			}
		})
	}
	wg.Wait()
	return out, cmpOr(first, ctx.Err())
}

func cmpOr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// probeLocks runs namesProbes Lock+Unlock pairs on fresh names by one
// goroutine, in namesRounds rounds, and returns the medians over the
// rounds of the Lock latency's p50 and p99 in µs. The Go collector is off
// meanwhile: the held leases are a large heap in this process, and its
// collections would be measured instead of the keyspace.
func probeLocks(ctx context.Context, qc *quorum.Client, stage int) (p50, p99 float64, err error) {
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var p50s, p99s []float64
	for r := range namesRounds {
		lat := make([]time.Duration, 0, namesProbes/namesRounds)
		for i := range namesProbes / namesRounds {
			m, err := qc.Mutex(fmt.Sprintf("probe/%d/%d/%d", stage, r, i), quorum.WithLeaseTime(namesLease))
			if err != nil {
				return 0, 0, err
			}
			t := time.Now()
			l, err := m.Lock(ctx)
			lat = append(lat, time.Since(t))
			if err != nil {
				return 0, 0, err
			}
			if err := l.Unlock(ctx); err != nil {
				return 0, 0, err
			}
		}
		s := sortedCopy(lat)
		p50s, p99s = append(p50s, us(percentile(s, 0.50))), append(p99s, us(percentile(s, 0.99)))
		time.Sleep(100 * time.Millisecond)
	}
	return median(p50s), median(p99s), nil
}

// usedMemory is INFO memory's used_memory less what is not the keys':
// the clients' buffers (64 connections filling), the AOF buffer and the
// replication backlog, which come and go with the traffic.
func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO memory: %w", err)
	}
	var total int64
	for i, k := range []string{"used_memory", "mem_clients_normal", "mem_clients_slaves", "mem_aof_buffer", "mem_replication_backlog"} {
		v, err := strconv.ParseInt(infoField(info, k), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO memory: %s: %w", k, err)
		}
		if i > 0 {
			v = -v
		}
		total += v
	}
	return total, nil
}

func heapInUse() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// buildCLI builds the quorumlock command into a temporary directory (the
// workspace's copy, so the one this bench measures).
func buildCLI(ctx context.Context, log io.Writer) (string, error) {
	dir, err := os.MkdirTemp("", "bench-cli-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "quorumlock")
	fmt.Fprintf(log, "names: building the quorumlock command …\n")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/quorumlock/quorumlock/cmd/quorumlock")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build the quorumlock command (or give -cli): %w: %s", err, oneLine(string(out)))
	}
	return bin, nil
}

// listTimeout bounds one listing: the listings are what is measured, and
// one that takes longer than this has failed the case's purpose anyway.
const listTimeout = 5 * time.Minute

// listCLI runs quorumlock locks --match 'names/*' --json --limit limit and
// counts the locks it printed.
func listCLI(ctx context.Context, cli string, nodes []string, limit, want int) Listing {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "locks", "--nodes", strings.Join(nodes, ","), "--match", namesPrefix+"*", "--json",
		"--limit", strconv.Itoa(limit))
	out, err := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err != nil {
		return Listing{Err: err.Error()}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Listing{Err: err.Error()}
	}
	peak := watchPeak(cmd.Process.Pid)
	// One object per lock: count the names that are ours.
	n := countNames(out)
	err = cmd.Wait()
	l := Listing{Seconds: time.Since(start).Seconds(), Listed: n, PeakMB: float64(peak()) / 1024}
	if err != nil {
		l.Err = err.Error()
		if e := strings.TrimSpace(stderr.String()); e != "" {
			l.Err = oneLine(e)
		}
	} else if n != want {
		l.Err = fmt.Sprintf("listed %d of %d names", n, want)
	}
	return l
}

// watchPeak samples process pid's VmHWM every few milliseconds until the
// returned function is called, which gives the highest in kB. Not the
// rusage of Wait: Go starts a command with vfork, so the child's maxrss
// starts from this process's (the bench holds every lease), hiding the
// command's own.
func watchPeak(pid int) func() int64 {
	var peak atomic.Int64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			peak.Store(max(peak.Load(), proc.StatusKB(pid, "VmHWM")))
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

// countNames counts the lines of r that name a lock of the case.
func countNames(r io.Reader) int {
	n := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"`+namesPrefix) && strings.Contains(sc.Text(), `"name"`) {
			n++
		}
	}
	return n
}

// listConsole starts quorumlock console on a free loopback port, asks it
// for GET /api/locks (its first page: want locks, and whether more) and
// reads the process's peak RSS before it stops it.
func listConsole(ctx context.Context, cli string, nodes []string, want int, more bool) Listing {
	port, err := localredis.FreePort()
	if err != nil {
		return Listing{Err: err.Error()}
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, cli, "console", "--nodes", strings.Join(nodes, ","), "--listen", addr,
		"--match", namesPrefix+"*", "--refresh", "1h")
	if err := cmd.Start(); err != nil {
		return Listing{Err: err.Error()}
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	url := "http://" + addr + "/api/locks"
	for i := 0; ; i++ {
		r, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			_ = r.Body.Close()
			break
		}
		if i > 200 || cctx.Err() != nil {
			return Listing{Err: "the console did not start: " + err.Error()}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Twice, keeping the faster answer that listed them all: on a loaded
	// machine one request in a few runs into a node's read timeout.
	var best Listing
	for i := range 2 {
		l := consoleGet(cctx, url, want, more)
		l.PeakMB = float64(proc.StatusKB(cmd.Process.Pid, "VmHWM")) / 1024
		if i == 0 || l.Err == "" && (best.Err != "" || l.Seconds < best.Seconds) {
			best = l
		}
	}
	return best
}

// consoleGet asks the console for its first page once.
func consoleGet(ctx context.Context, url string, want int, more bool) Listing {
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Listing{Err: err.Error()}
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	l := Listing{Seconds: time.Since(start).Seconds()}
	if err != nil {
		l.Err = err.Error()
		return l
	}
	var v struct {
		Locks   []struct{ Name string } `json:"locks"`
		More    bool                    `json:"more"`
		ListErr string                  `json:"list_error"`
	}
	switch {
	case resp.StatusCode != http.StatusOK:
		l.Err = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, oneLine(string(body)))
	case json.Unmarshal(body, &v) != nil:
		l.Err = "the reply is not the console's JSON: " + oneLine(string(body))
	default:
		l.Listed, l.Err = len(v.Locks), v.ListErr
		switch {
		case l.Err != "":
		case l.Listed != want:
			l.Err = fmt.Sprintf("listed %d names on its first page, want %d", l.Listed, want)
		case v.More != more:
			l.Err = fmt.Sprintf("says more %v, want %v", v.More, more)
		}
	}
	return l
}

func printNames(w io.Writer, rows []NamesRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## names: many distinct names held (quorumlock on %d nodes, fencing off, %d goroutines filling; each row holds the names of the rows above too)\n\n", namesNodes, namesFillers)
	fmt.Fprintln(w, "| names held | server B per held lock | redislock B per held lock | ÷ redislock | B per retained fencing counter | client heap B per lease | fill acq/s | Lock p50 µs | Lock p99 µs | `quorumlock locks --limit 0` s · peak MB | its first page s · peak MB | console /api/locks first page s · peak MB |")
	fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %.2f | %.0f | %.0f | %s | %.0f | %.0f | %s | %s | %s |\n", commas(int64(r.Names)),
			r.HeldBytes, r.RedislockBytes, r.HeldBytes/r.RedislockBytes, r.CounterBytes, r.ClientBytes,
			rate(r.FillPerSec), r.LockP50us, r.LockP99us, listingCell(r.CLI), listingCell(r.CLIPage), listingCell(r.Console))
	}
	for _, r := range rows {
		for _, l := range []struct {
			what string
			l    Listing
		}{{"quorumlock locks", r.CLI}, {"quorumlock locks, first page", r.CLIPage}, {"console", r.Console}} {
			if l.l.Err != "" {
				fmt.Fprintf(w, "note: %s names: %s: %s\n", commas(int64(r.Names)), l.what, l.l.Err)
			}
		}
	}
	printChecks(w, namesChecks(rows))
}

func listingCell(l Listing) string {
	s := fmt.Sprintf("%.1f · %.0f", l.Seconds, l.PeakMB)
	if l.Err != "" {
		s += " (failed)"
	}
	return s
}

// namesChecks are the targets for many names, judged on the
// largest row against the smallest.
func namesChecks(rows []NamesRow) []Check {
	if len(rows) < 2 {
		return nil
	}
	a, z := rows[0], rows[len(rows)-1]
	at := commas(int64(z.Names))
	mem := z.HeldBytes / z.RedislockBytes
	out := []Check{
		{Target: fmt.Sprintf("names: server memory per held lock at %s names ÷ redislock's ≤ 1.20×", at),
			Measured: fmt.Sprintf("%.2f× (%.0f vs %.0f B)", mem, z.HeldBytes, z.RedislockBytes), Pass: mem <= 1.2},
	}
	for _, p := range []struct {
		what   string
		lo, hi float64
	}{{"p50", a.LockP50us, z.LockP50us}, {"p99", a.LockP99us, z.LockP99us}} {
		x := p.hi / p.lo
		out = append(out, Check{Target: fmt.Sprintf("names: Lock %s at %s names ÷ at %s ≤ 1.20×", p.what, at, commas(int64(a.Names))),
			Measured: fmt.Sprintf("%.2f× (%.0f vs %.0f µs)", x, p.hi, p.lo), Pass: x <= 1.2})
	}
	for _, l := range []struct {
		what string
		l    Listing
	}{
		{"`quorumlock locks --match --limit 0` lists all " + at + " names", z.CLI},
		{fmt.Sprintf("`quorumlock locks --match` lists its first page (%s) of %s names", commas(cliPage), at), z.CLIPage},
		{fmt.Sprintf("the console's /api/locks lists its first page (%d) of %s names", consolePage, at), z.Console},
	} {
		m := fmt.Sprintf("%.1f s, peak RSS %.0f MB", l.l.Seconds, l.l.PeakMB)
		if l.l.Err != "" {
			m += ": " + l.l.Err
		}
		out = append(out, Check{Target: "names: " + l.what, Measured: m, Pass: l.l.Err == ""})
	}
	// A listing's memory is bounded by its page, not by the names.
	x := z.CLI.PeakMB / a.CLI.PeakMB
	out = append(out, Check{Target: fmt.Sprintf("names: `quorumlock locks --limit 0` peak RSS at %s names ÷ at %s ≤ 2×", at, commas(int64(a.Names))),
		Measured: fmt.Sprintf("%.2f× (%.0f vs %.0f MB)", x, z.CLI.PeakMB, a.CLI.PeakMB), Pass: x <= 2})
	return out
}
