package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the driver, in tests only

	"github.com/quorumlock/quorumlock/localredis"
)

// pgBin finds PostgreSQL's server binaries: $QUORUMLOCK_PG_BIN, the
// directory of initdb on PATH, or the newest /usr/lib/postgresql/*/bin.
func pgBin() (string, error) {
	if d := os.Getenv("QUORUMLOCK_PG_BIN"); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("PostgreSQL server binaries (initdb, postgres) not found: install the Debian package postgresql (scripts/ensure-deps.sh does) or set QUORUMLOCK_PG_BIN")
}

// required: in CI (or under make test) a missing PostgreSQL fails the test.
func required() bool { return os.Getenv("CI") != "" || localredis.Required() }

// startPostgres runs PostgreSQL for a test (see launchPostgres); without
// the server binaries it skips, or fails where PostgreSQL is required.
// Everything is stopped and removed in t.Cleanup.
func startPostgres(t *testing.T) *sql.DB {
	t.Helper()
	if _, err := pgBin(); err != nil {
		if required() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	db, stop, err := launchPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return db
}

// launchPostgres runs initdb and postgres in a temporary directory on a free
// loopback port and returns a database/sql handle (pgx driver) and a
// function that stops the server and removes the directory. As root the
// server runs as the postgres user (or nobody): PostgreSQL refuses to run as
// root.
func launchPostgres() (_ *sql.DB, _ func(), err error) {
	bin, err := pgBin()
	if err != nil {
		return nil, nil, err
	}
	var cleanups []func()
	stop := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	dir, err := os.MkdirTemp("", "quorumlock-pg-*")
	if err != nil {
		return nil, nil, err
	}
	cleanups = append(cleanups, func() { _ = os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		if err != nil {
			return nil, nil, fmt.Errorf("running as root and no postgres or nobody user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, nil, err
		}
	}
	command := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "HOME="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	data := filepath.Join(dir, "data")
	if out, err := command("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := localredis.FreePort()
	if err != nil {
		return nil, nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return nil, nil, err
	}
	cleanups = append(cleanups, func() { _ = logf.Close() })
	srv := command("postgres", "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		return nil, nil, fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = srv.Wait(); close(exited) }()
	cleanups = append(cleanups, func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = srv.Process.Kill()
			<-exited
		}
	})
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port))
	if err != nil {
		return nil, nil, err
	}
	cleanups = append(cleanups, func() { _ = db.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return db, stop, nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
			return nil, nil, fmt.Errorf("postgres exited at start: %s", strings.TrimSpace(string(log)))
		default:
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("postgres not ready after 30s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
