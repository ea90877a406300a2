package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const composeFile = "../docker-compose.yml"

type composeDoc struct {
	Configs map[string]struct {
		Content string `yaml:"content"`
	} `yaml:"configs"`
	Services map[string]struct {
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Ports   []string `yaml:"ports"`
		Configs []struct {
			Source string `yaml:"source"`
			Target string `yaml:"target"`
		} `yaml:"configs"`
	} `yaml:"services"`
}

// publishes reports whether ports has "host:hostPort:containerPort" for the
// given host address.
func publishes(ports []string, hostAddr, containerPort string) bool {
	host, port, _ := net.SplitHostPort(hostAddr)
	return slices.Contains(ports, host+":"+port+":"+containerPort)
}

// The compose file sets up exactly what ComposeEndpoints (and so Connect)
// expects: service names, proxy names, listen and upstream addresses,
// published ports, the replica's and the sentinels' view of the peer proxies.
func TestComposeFileMatchesEndpoints(t *testing.T) {
	b, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc composeDoc
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	e := ComposeEndpoints("", "")
	if e.ToxiproxyURL != "http://127.0.0.1:8474" {
		t.Fatalf("ToxiproxyURL %s", e.ToxiproxyURL)
	}
	tp, ok := doc.Services["toxiproxy"]
	if !ok {
		t.Fatal("no toxiproxy service")
	}
	if !strings.Contains(tp.Image, "toxiproxy:2.12") {
		t.Errorf("toxiproxy image %q, want 2.12.x like the embedded one", tp.Image)
	}
	if !publishes(tp.Ports, "127.0.0.1:8474", "8474") {
		t.Errorf("toxiproxy does not publish its API on 127.0.0.1:8474: %v", tp.Ports)
	}
	if len(tp.Configs) != 1 || !slices.Contains(tp.Command, "-config="+tp.Configs[0].Target) {
		t.Fatalf("toxiproxy does not load its proxy config: command %v configs %+v", tp.Command, tp.Configs)
	}
	var proxies []struct {
		Name, Listen, Upstream string
		Enabled                bool
	}
	if err := json.Unmarshal([]byte(doc.Configs[tp.Configs[0].Source].Content), &proxies); err != nil {
		t.Fatalf("toxiproxy config: %v", err)
	}
	type spec struct{ Name, Listen, Upstream string }
	var got []spec
	for _, p := range proxies {
		if !p.Enabled {
			t.Errorf("proxy %s disabled at start", p.Name)
		}
		got = append(got, spec{p.Name, p.Listen, p.Upstream})
	}
	var want []spec
	checkNode := func(ep Endpoint) {
		name := ep.Client.Name
		svc, ok := doc.Services[name]
		if !ok {
			t.Errorf("no service %s", name)
			return
		}
		want = append(want, spec{ep.Client.Name, ep.Client.Listen, ep.Client.Upstream})
		if ep.Client.Upstream != name+":6379" {
			t.Errorf("%s upstream %s", name, ep.Client.Upstream)
		}
		_, port, _ := net.SplitHostPort(ep.Client.Listen)
		if !publishes(tp.Ports, ep.Client.Addr, port) {
			t.Errorf("toxiproxy does not publish %s's proxy at %s: %v", name, ep.Client.Addr, tp.Ports)
		}
		if !publishes(svc.Ports, ep.Admin, "6379") {
			t.Errorf("%s does not publish its admin port %s: %v", name, ep.Admin, svc.Ports)
		}
		if ep.Peer.Name != "" {
			want = append(want, spec{ep.Peer.Name, ep.Peer.Listen, ep.Peer.Upstream})
			_, pport, _ := net.SplitHostPort(ep.Peer.Addr)
			if !strings.Contains(strings.Join(svc.Command, " "), "--replica-announce-ip toxiproxy --replica-announce-port "+pport) {
				t.Errorf("%s does not announce its peer proxy %s: %v", name, ep.Peer.Addr, svc.Command)
			}
		}
	}
	if len(e.Masters) != 5 {
		t.Fatalf("%d masters", len(e.Masters))
	}
	for _, m := range e.Masters {
		checkNode(m)
	}
	g := e.Groups[0]
	for _, n := range g.Nodes {
		checkNode(n)
	}
	master, replica := g.Nodes[0], g.Nodes[1]
	mhost, mport, _ := net.SplitHostPort(master.Peer.Addr)
	if cmd := strings.Join(doc.Services[replica.Client.Name].Command, " "); !strings.Contains(cmd, "--replicaof "+mhost+" "+mport) {
		t.Errorf("replica does not replicate through %s: %s", master.Peer.Addr, cmd)
	}
	slices.SortFunc(got, func(a, b spec) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(want, func(a, b spec) int { return strings.Compare(a.Name, b.Name) })
	if !slices.Equal(got, want) {
		t.Errorf("toxiproxy config\n got %v\nwant %v", got, want)
	}
	if len(g.Sentinels) != 3 {
		t.Fatalf("%d sentinels", len(g.Sentinels))
	}
	for i, addr := range g.Sentinels {
		svc, ok := doc.Services["g0s"+string(rune('0'+i))]
		if !ok {
			t.Errorf("no sentinel service g0s%d", i)
			continue
		}
		if !publishes(svc.Ports, addr, "26379") {
			t.Errorf("sentinel %d not published at %s: %v", i, addr, svc.Ports)
		}
		if cmd := strings.Join(svc.Command, " "); !strings.Contains(cmd, "sentinel monitor "+g.Name+" "+mhost+" "+mport+" 2") ||
			!strings.Contains(cmd, "announce-hostnames yes") {
			t.Errorf("sentinel %d does not monitor %s at %s with hostnames: %s", i, g.Name, master.Peer.Addr, cmd)
		}
	}
}

// composeCommand checks that `docker compose` exists, and skips (or, with
// QUORUMLOCK_REQUIRE_DOCKER, fails) the test if not.
func composeCommand(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("docker", "compose", "version").CombinedOutput(); err != nil {
		skipWithoutDocker(t, "docker compose unavailable (%v: %s); scripts/test.sh builds it, and the YAML is still checked by TestComposeFileMatchesEndpoints", err, bytes.TrimSpace(out))
	}
}

// `docker compose config` validates the file against the compose spec.
func TestComposeFileValidates(t *testing.T) {
	composeCommand(t)
	abs, _ := filepath.Abs(composeFile)
	out, err := exec.Command("docker", "compose", "-f", abs, "config", "--quiet").CombinedOutput()
	if err != nil {
		t.Fatalf("docker compose config: %v\n%s", err, out)
	}
}

// The compose file brought up for real: Connect reaches every node through
// ComposeEndpoints, a nemesis of partitions, pauses and crashes (docker
// compose pause/kill/start) runs over the five masters while they take
// writes, and sentinels fail the group over.
func TestComposeUp(t *testing.T) {
	composeCommand(t)
	if err := DockerAvailable(t.Context()); err != nil {
		skipWithoutDocker(t, "no Docker engine: %v", err)
	}
	file, _ := filepath.Abs(composeFile)
	lockComposePorts(t)
	project := "quorumlock-" + strconv.Itoa(os.Getpid())
	if run := os.Getenv(DockerRunEnv); run != "" {
		project = "quorumlock-" + run
	}
	compose := func(ctx context.Context, args ...string) error {
		full := append([]string{"compose", "-f", file, "-p", project}, args...)
		out, err := exec.CommandContext(ctx, "docker", full...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("docker %s: %w\n%s", strings.Join(full, " "), err, out)
		}
		return nil
	}
	t.Cleanup(func() {
		// Always, and on a fresh context: the test's may be over.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := compose(ctx, "down", "--timeout", "1", "--volumes", "--remove-orphans"); err != nil {
			t.Error(err)
		}
	})
	ctx := bounded(t, 3*time.Minute)
	if err := compose(ctx, "up", "--detach", "--quiet-pull"); err != nil {
		t.Fatal(err)
	}
	e := ComposeEndpoints("", file)
	setProject := func(ep *Endpoint) {
		if p, ok := ep.Process.(*ComposeProcess); ok {
			p.Project = project
		}
	}
	for i := range e.Masters {
		setProject(&e.Masters[i])
	}
	for i := range e.Groups[0].Nodes {
		setProject(&e.Groups[0].Nodes[i])
	}
	var c *Cluster
	eventually(t, time.Minute, "the compose cluster answers through toxiproxy", func() bool {
		var err error
		c, err = Connect(ctx, e)
		if err != nil {
			t.Log(err)
		}
		return err == nil
	})
	t.Cleanup(func() { _ = c.Close() })
	if got := len(c.Masters); got != ComposeMasters {
		t.Fatalf("%d masters", got)
	}

	var faults []Fault
	for _, m := range c.Masters {
		faults = append(faults,
			&Partition{Proxy: m.Proxy()},
			&Pause{Node: m},
			&Crash{Node: m, Restart: true},
		)
	}
	rec := runNemesisOn(t, c, faults, 7, 6*time.Second,
		Range{Min: 200 * time.Millisecond, Max: 500 * time.Millisecond},
		Range{Min: 100 * time.Millisecond, Max: 200 * time.Millisecond})
	if len(rec.Windows()) == 0 {
		t.Error("the nemesis injected nothing")
	}

	g := c.Groups[0]
	if err := g.WaitReplicated(ctx); err != nil {
		t.Fatal(err)
	}
	old := g.Master()
	f := &SentinelFailover{Group: g}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if g.Master() == old {
		t.Errorf("sentinels kept %s as master", old.Name())
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	checkWhole(t, c)
}

// lockComposePorts holds a machine-wide lock for the rest of the test: the
// compose file publishes fixed host ports, so two test runs on one machine
// (CI runs three at once) take turns. It fails if the ports are taken by
// something else.
func lockComposePorts(t *testing.T) {
	t.Helper()
	// /tmp, not os.TempDir: runs with different TMPDIRs share the ports.
	f, err := os.OpenFile("/tmp/quorumlock-compose.lock", os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("another run holds %s: %v", f.Name(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
	for _, port := range []int{ComposeToxiproxyPort, composeClientBase, composeAdminBase, composeSentinelBase} {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d, which docker-compose.yml publishes, is taken: %v", port, err)
		}
		l.Close()
	}
}
