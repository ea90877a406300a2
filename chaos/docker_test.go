package chaos

import (
	"errors"
	"os"
	"testing"
	"time"
)

// Without a Docker engine the probe and the Docker backend fail fast and
// cleanly; with one, the same faults run against containers.
func TestDockerBackend(t *testing.T) {
	ctx := bounded(t, 3*time.Minute)
	start := time.Now()
	err := DockerAvailable(ctx)
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("DockerAvailable took %v", took)
	}
	if err != nil {
		if !errors.Is(err, ErrNoDocker) {
			t.Fatalf("DockerAvailable: %v, want ErrNoDocker", err)
		}
		start = time.Now()
		_, serr := Start(ctx, Topology{Masters: 1, Backend: Docker})
		if !errors.Is(serr, ErrNoDocker) || time.Since(start) > 6*time.Second {
			t.Fatalf("Start with the Docker backend and no engine: %v after %v", serr, time.Since(start))
		}
		skipWithoutDocker(t, "no Docker engine: %v", err)
	}
	if _, err := Start(ctx, Topology{Groups: 1, Sentinels: 3, Backend: Docker}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("sentinels on Docker: %v, want ErrUnsupported", err)
	}
	c := StartT(t, Topology{Masters: 1, Backend: Docker})
	n := c.Masters[0]
	cl := client(t, n.Options())
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	part := &Partition{Proxy: n.Proxy()}
	if err := part.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err, _ := pingWithin(ctx, cl, deadline); !isTimeout(err) {
		t.Fatalf("PING through a partition: %v", err)
	}
	if err := part.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	pause := &Pause{Node: n}
	if err := pause.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err, _ := pingWithin(ctx, cl, deadline); !isTimeout(err) {
		t.Fatalf("PING to a paused container: %v", err)
	}
	if err := pause.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	crash := &Crash{Node: n, Restart: true}
	if err := crash.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err, _ := pingWithin(ctx, cl, 5*time.Second); err != nil {
		t.Fatalf("PING after the container restarted: %v", err)
	}
	if n, _ := cl.Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("key survived a crash without persistence")
	}
}

func init() {
	// testcontainers' reaper (Ryuk) is an image from a registry; with
	// locally built images (docker/build-images.sh) there is none to pull
	// it from. The clusters terminate their containers on Close, and
	// scripts/test.sh removes anything left by label.
	if os.Getenv(RedisImageEnv) != "" && os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
}

// skipWithoutDocker skips a test that needs a Docker engine, or fails it
// where QUORUMLOCK_REQUIRE_DOCKER is set (CI, whose scripts/test.sh starts
// an engine), so Docker tests cannot silently stop running there.
func skipWithoutDocker(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("QUORUMLOCK_REQUIRE_DOCKER") != "" {
		t.Fatalf("QUORUMLOCK_REQUIRE_DOCKER is set but "+format, args...)
	}
	t.Skipf(format, args...)
}

// A master+replica group on Docker replicates through its peer proxies in
// the toxiproxy container: cutting the master's peer proxy cuts the link
// while clients still reach both nodes, and a promotion works as locally.
func TestDockerGroup(t *testing.T) {
	if err := DockerAvailable(t.Context()); err != nil {
		skipWithoutDocker(t, "no Docker engine: %v", err)
	}
	ctx := bounded(t, 3*time.Minute)
	c := StartT(t, Topology{Groups: 1, Backend: Docker})
	g := c.Groups[0]
	m, r := g.Master(), g.Replicas()[0]
	mc, rc := client(t, m.Options()), client(t, r.Options())
	if err := mc.Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the write reaches the replica", func() bool {
		return rc.Get(ctx, "k").Val() == "1"
	})
	cut := &Partition{Proxy: m.PeerProxy(), Loud: true}
	if err := cut.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mc.Set(ctx, "k", "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if v := rc.Get(ctx, "k").Val(); v != "1" {
		t.Fatalf("the replica saw %q through a cut link", v)
	}
	if err := cut.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitReplicated(ctx); err != nil {
		t.Fatal(err)
	}
	p := &Promote{Group: g}
	if err := p.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if g.Master() != r {
		t.Fatalf("master %s after promotion", g.Master().Name())
	}
	if err := p.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	checkWhole(t, c)
}
