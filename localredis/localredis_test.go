package localredis

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

func TestStartPauseKillRestart(t *testing.T) {
	ctx := t.Context()
	s := StartT(t, Config{Persistence: AOFAlways})
	c := s.Client()
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := c.Ping(pctx).Err()
	cancel()
	if err == nil {
		t.Fatal("PING answered while the server was paused")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("still running after Kill")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if s.PID() == pid {
		t.Fatal("restart kept the old pid")
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after restart with AOF got %q, %v; want v", v, err)
	}
	// Power loss: data files gone.
	_ = s.Kill()
	if err := s.WipeData(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("key survived a wipe")
	}
}

func TestStartNAndReplica(t *testing.T) {
	ctx := t.Context()
	ss := StartNT(t, 2, Config{})
	if ss[0].Port() == ss[1].Port() {
		t.Fatal("two servers on one port")
	}
	rep := StartT(t, Config{ReplicaOf: ss[0].Addr(), Extra: []string{"maxmemory-policy noeviction"}})
	rc := rep.Client()
	defer rc.Close()
	mc := ss[0].Client()
	defer mc.Close()
	if err := mc.Set(ctx, "x", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, _ := rc.Get(ctx, "x").Result()
		if v == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replica never received the write")
		}
		time.Sleep(20 * time.Millisecond) // poll: replication is asynchronous
	}
	pol, err := rc.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil || pol["maxmemory-policy"] != "noeviction" {
		t.Fatalf("extra config not applied: %v %v", pol, err)
	}
}

func TestConfigFileAndSetReplicaOf(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	file := filepath.Join(dir, "redis.conf")
	// The file sets a policy; its port is overridden by the command line.
	if err := os.WriteFile(file, []byte("maxmemory-policy allkeys-lru\nport 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := StartT(t, Config{})
	s := StartT(t, Config{ConfigFile: file})
	c := s.Client()
	defer c.Close()
	pol, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil || pol["maxmemory-policy"] != "allkeys-lru" {
		t.Fatalf("config file not read: %v %v", pol, err)
	}
	if s.Port() == 1 {
		t.Fatal("the file's port won over the command line")
	}
	// After SetReplicaOf, the next restart replicates from m.
	_ = s.Kill()
	s.SetReplicaOf(m.Addr())
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	role, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || role[0] != "slave" {
		t.Fatalf("ROLE after SetReplicaOf+Restart: %v, %v", role, err)
	}
	if s.Config().ReplicaOf != m.Addr() {
		t.Fatalf("Config().ReplicaOf = %q", s.Config().ReplicaOf)
	}
}

func TestClientOptionsAreLockSafe(t *testing.T) {
	o := ClientOptions("127.0.0.1:1")
	if o.Addr != "127.0.0.1:1" || !o.ContextTimeoutEnabled || o.MaxRetries != -1 || o.DialerRetries != 1 {
		t.Fatalf("options %+v", o)
	}
	s := &Server{port: 7}
	if got := s.Options(); got.Addr != "127.0.0.1:7" || got.MaxRetries != -1 {
		t.Fatalf("Server.Options %+v", got)
	}
}

// Two servers handed the same port: the one that loses the bind must not take
// the winner's answer as its own (issue: two Servers shared one address).
func TestStartProvesTheServerIsOurs(t *testing.T) {
	first := StartT(t, Config{})

	// Asked for the port in use: the foreign server answers PING, but Start
	// must see that it is not its own process and fail.
	if s, err := Start(t.Context(), Config{Port: first.Port()}); err == nil {
		_ = s.Stop()
		t.Fatalf("Start on port %d (in use by pid %d) succeeded with pid %d", first.Port(), first.PID(), s.PID())
	}

	// Handed the port in use by the free-port picker (as two concurrent
	// Starts can be): Start must retry on another port.
	handed := 0
	pickPort = func() (int, error) {
		handed++
		if handed == 1 {
			return first.Port(), nil
		}
		return FreePort()
	}
	t.Cleanup(func() { pickPort = FreePort })
	second := StartT(t, Config{})
	if second.Port() == first.Port() {
		t.Fatalf("second server reports the first one's port %d", first.Port())
	}
	if handed < 2 {
		t.Fatalf("Start did not retry after the taken port (picked %d ports)", handed)
	}
	c := second.Client()
	defer c.Close()
	pid, err := serverPID(t.Context(), c)
	if err != nil || pid != second.PID() {
		t.Fatalf("server at %s is pid %d (err %v), want %d", second.Addr(), pid, err, second.PID())
	}
}
