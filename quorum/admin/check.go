package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/fanout"
	inode "github.com/quorumlock/quorumlock/internal/node"
)

// Severity grades a preflight finding.
type Severity int

const (
	// Notice: worth knowing, nothing to fix.
	Notice Severity = iota + 1
	// Warning: safe only under conditions the check cannot see (a node that
	// never crashes, a maxmemory that is never set). Fix it or know why not.
	Warning
	// Problem: the lock is not as safe as it claims (a node counted twice, a
	// replica in place of a master, lock keys that can be evicted).
	Problem
)

func (s Severity) String() string {
	switch s {
	case Notice:
		return "notice"
	case Warning:
		return "WARNING"
	case Problem:
		return "PROBLEM"
	}
	return "ok"
}

// Finding is one thing the preflight check found.
type Finding struct {
	Severity Severity
	// Nodes the finding is about (names as in reports); empty for the
	// whole set.
	Nodes []string
	// Message says what is wrong and what to do.
	Message string
}

func (f Finding) String() string {
	where := "all nodes"
	if len(f.Nodes) > 0 {
		where = strings.Join(f.Nodes, ", ")
	}
	return fmt.Sprintf("%-8s %s: %s", f.Severity, where, f.Message)
}

// ServerFacts is what one Redis server told the check. A Cluster node has
// one per master.
type ServerFacts struct {
	Node    string // the quorum node it belongs to
	Addr    string // the server's address (a Cluster master's own)
	Err     error  // why it could not be checked
	RunID   string
	Version string
	Mode    string // standalone, cluster or sentinel (redis_mode)
	Role    string // master or slave
	// MasterAddr is the master a replica follows.
	MasterAddr string
	Replicas   int // connected replicas
	Uptime     time.Duration
	// AOF is appendonly; AppendFsync its fsync policy ("" when CONFIG GET
	// is refused); Save the RDB snapshot rules ("" when none).
	AOF         bool
	AppendFsync string
	Save        string
	MaxMemory   int64
	Policy      string // maxmemory-policy
}

// Placement is where a lock's keys live on a Cluster node.
type Placement struct {
	Node   string
	Name   string
	Keys   []string
	Slots  []int64 // per key; all equal when the hash tag works
	Master string  // the master owning the lock key's slot
}

// Report is the preflight check's answer: facts per server, key
// placement on Cluster nodes, and findings, worst first. String renders it
// for a person.
type Report struct {
	Servers    []ServerFacts
	Placements []Placement
	Findings   []Finding
}

// Worst is the most severe finding (0 when none).
func (r *Report) Worst() Severity {
	var w Severity
	for _, f := range r.Findings {
		w = max(w, f.Severity)
	}
	return w
}

// Count is the number of findings of severity s.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// String renders the report: one line per server, placements, findings.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "preflight: %d servers, %d problems, %d warnings, %d notices\n",
		len(r.Servers), r.Count(Problem), r.Count(Warning), r.Count(Notice))
	for _, s := range r.Servers {
		if s.Err != nil {
			fmt.Fprintf(&b, "  %-22s unreachable: %v\n", s.Addr, s.Err)
			continue
		}
		role := s.Role
		if s.Role == "slave" {
			role = "replica of " + s.MasterAddr
		} else if s.Replicas > 0 {
			role += fmt.Sprintf(" (%d replicas)", s.Replicas)
		}
		aof := "aof off"
		if s.AOF {
			aof = "aof on, appendfsync " + or(s.AppendFsync, "?")
		}
		mm := "no maxmemory"
		if s.MaxMemory > 0 {
			mm = "maxmemory " + strconv.FormatInt(s.MaxMemory, 10)
		}
		fmt.Fprintf(&b, "  %-22s redis %s %s, %s, run_id %.8s, up %v, %s, save %q, %s (%s)\n",
			s.Addr, s.Version, s.Mode, role, s.RunID, s.Uptime, aof, s.Save, mm, s.Policy)
	}
	for _, p := range r.Placements {
		fmt.Fprintf(&b, "  lock %q on %s: slot %d on master %s\n", p.Name, p.Node, p.Slots[0], p.Master)
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "%s\n", f)
	}
	if len(r.Findings) == 0 {
		b.WriteString("no findings\n")
	}
	return b.String()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ErrPreflight: quorum.New was told to refuse a setup (quorum.WithPreflight)
// and the
// check found something at or above that severity.
var ErrPreflight = errors.New("quorumlock: preflight check failed")

// PreflightError carries the report of a failed preflight. It unwraps to
// ErrPreflight.
type PreflightError struct {
	Refuse Severity
	Report *Report
}

func (e *PreflightError) Error() string {
	var lines []string
	for _, f := range e.Report.Findings {
		if f.Severity >= e.Refuse {
			lines = append(lines, f.String())
		}
	}
	return fmt.Sprintf("quorumlock: preflight found %d finding(s) at %s or worse (fix them, or lower quorum.WithPreflight's level):\n%s",
		len(lines), e.Refuse, strings.Join(lines, "\n"))
}

func (e *PreflightError) Unwrap() error { return ErrPreflight }

// PreflightTimeout bounds the check quorum.New runs under
// quorum.WithPreflight.
const PreflightTimeout = 5 * time.Second

// Preflight runs Check (bounded by PreflightTimeout) and returns a
// *PreflightError when a finding is at refuse or worse. quorum.New calls
// it under quorum.WithPreflight.
func (t *Tools) Preflight(refuse Severity) error {
	ctx, cancel := context.WithTimeout(context.Background(), PreflightTimeout)
	defer cancel()
	r, err := t.Check(ctx)
	if err != nil {
		return err
	}
	if r.Worst() >= refuse {
		return &PreflightError{Refuse: refuse, Report: r}
	}
	return nil
}

// Check is the preflight check of the client's nodes. It asks every node in
// parallel (INFO, CONFIG GET; a Cluster node on each master) and reports,
// for a person to read:
//   - servers reached through two nodes (the same run_id: two addresses can
//     reach one server), which makes a majority smaller than it looks;
//   - nodes that are replicas, not masters;
//   - persistence: AOF and appendfsync (a crash-restart without them
//     forgets locks and fencing counters; restart detection, on by default
//     for such nodes, keeps it from voting meanwhile, and the finding says
//     what to do when WithRestartDetection(false) turned it off);
//   - a maxmemory-policy that can evict lock keys (anything but noeviction:
//     lock keys carry a TTL, so even volatile-* policies take them);
//   - replicas for WithReplicaAck, the number of nodes;
//   - on Cluster nodes, the slot and master of each named lock's keys.
//
// Unreachable nodes are findings, not errors; the error is for a done ctx.
func (t *Tools) Check(ctx context.Context, names ...string) (*Report, error) {
	r := &Report{}
	type nodeFacts struct {
		servers    []ServerFacts
		placements []Placement
	}
	per := make([]nodeFacts, len(t.nodes))
	fanout.All(len(t.nodes), func(i int) error {
		n := t.nodes[i]
		per[i].servers = serverFacts(ctx, n) // unreachable: a finding, not an error
		if cc, ok := n.Client().(*redis.ClusterClient); ok {
			per[i].placements = placements(ctx, n, cc, names)
		}
		return nil
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, p := range per {
		r.Servers = append(r.Servers, p.servers...)
		r.Placements = append(r.Placements, p.placements...)
	}
	r.Findings = t.findings(r)
	if f, ok := t.reachFinding(r); ok {
		r.Findings = append(r.Findings, f)
	}
	slices.SortStableFunc(r.Findings, func(a, b Finding) int { return int(b.Severity - a.Severity) })
	return r, nil
}

func serverFacts(ctx context.Context, n *inode.Node) []ServerFacts {
	var clients []*redis.Client
	switch cl := n.Client().(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex
		err := cl.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			mu.Lock()
			clients = append(clients, m)
			mu.Unlock()
			return nil
		})
		if err != nil {
			return []ServerFacts{{Node: n.Name(), Addr: n.Name(), Err: err}}
		}
		slices.SortFunc(clients, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	case *redis.Client:
		clients = []*redis.Client{cl}
	default:
		return []ServerFacts{{Node: n.Name(), Addr: n.Name(), Err: fmt.Errorf("cannot check a %T", cl)}}
	}
	out := make([]ServerFacts, len(clients))
	for i, cl := range clients {
		out[i] = oneServer(ctx, n, cl)
	}
	return out
}

func oneServer(ctx context.Context, n *inode.Node, cl *redis.Client) ServerFacts {
	f := ServerFacts{Node: n.Name(), Addr: cl.Options().Addr}
	if _, cluster := n.Client().(*redis.ClusterClient); !cluster {
		f.Addr = n.Name()
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := cl.Info(cctx, "server", "replication", "persistence", "memory").Result()
	if err != nil {
		f.Err = err
		return f
	}
	in := inode.ParseInfo(s)
	f.RunID, f.Version, f.Mode, f.Role = in["run_id"], in["redis_version"], in["redis_mode"], in["role"]
	f.MasterAddr = in["master_host"] + ":" + in["master_port"]
	f.Replicas, _ = strconv.Atoi(in["connected_slaves"])
	up, _ := strconv.ParseInt(in["uptime_in_seconds"], 10, 64)
	f.Uptime = time.Duration(up) * time.Second
	f.AOF = in["aof_enabled"] == "1"
	f.MaxMemory, _ = strconv.ParseInt(in["maxmemory"], 10, 64)
	f.Policy = in["maxmemory_policy"]
	// appendfsync and save are not in INFO; CONFIG GET may be refused on
	// managed services (then they stay unknown).
	if cfg, err := cl.ConfigGet(cctx, "appendfsync").Result(); err == nil {
		f.AppendFsync = cfg["appendfsync"]
	}
	if cfg, err := cl.ConfigGet(cctx, "save").Result(); err == nil {
		f.Save = cfg["save"]
	}
	return f
}

func placements(ctx context.Context, n *inode.Node, cc *redis.ClusterClient, names []string) []Placement {
	var out []Placement
	for _, name := range names {
		k := n.Keys(name)
		p := Placement{Node: n.Name(), Name: name, Keys: []string{k.Lock, k.Fence, k.Channel}}
		for _, key := range p.Keys {
			slot, err := cc.ClusterKeySlot(ctx, key).Result()
			if err != nil {
				slot = -1
			}
			p.Slots = append(p.Slots, slot)
		}
		if m, err := cc.MasterForKey(ctx, k.Lock); err == nil {
			p.Master = m.Options().Addr
		}
		out = append(out, p)
	}
	return out
}

// addFinding records one finding.
type addFinding func(s Severity, msg string, nodes ...string)

// findings grades the facts.
func (t *Tools) findings(r *Report) []Finding {
	var fs []Finding
	add := func(s Severity, msg string, nodes ...string) {
		fs = append(fs, Finding{Severity: s, Nodes: nodes, Message: msg})
	}
	t.countFindings(add)
	byRun := map[string][]ServerFacts{}
	for _, s := range r.Servers {
		if s.Err != nil {
			add(Warning, fmt.Sprintf("could not be checked: %v", s.Err), s.Addr)
			continue
		}
		if s.RunID != "" {
			byRun[s.RunID] = append(byRun[s.RunID], s)
		}
		t.serverFindings(s, add)
	}
	sharedServerFindings(byRun, add)
	t.keyFindings(r, add)
	return fs
}

// countFindings grades the number of nodes.
func (t *Tools) countFindings(add addFinding) {
	n := len(t.nodes)
	switch {
	case n < 3:
		add(Warning, fmt.Sprintf("%d node(s): a majority of %d survives no node failure; use 3 (survive 1) or 5 (survive 2) independent servers", n, n/2+1))
	case n%2 == 0:
		add(Notice, fmt.Sprintf("%d nodes survive as many failures as %d; an odd number saves a server", n, n-1))
	}
}

// serverFindings grades one server's role, eviction policy, persistence,
// replicas and uptime.
func (t *Tools) serverFindings(s ServerFacts, add addFinding) {
	if s.Role != "" && s.Role != "master" {
		add(Problem, fmt.Sprintf("is a replica (of %s), not a master: it refuses lock writes (READONLY), or with replica-read-only no loses them at the next sync; give the quorum masters only", s.MasterAddr), s.Addr)
	}
	if s.Policy != "" && s.Policy != "noeviction" {
		if s.MaxMemory > 0 {
			add(Problem, fmt.Sprintf("maxmemory-policy %s with maxmemory %d can evict lock keys under memory pressure (they carry a TTL, so volatile-* policies take them too): a held lock would vanish; set maxmemory-policy noeviction", s.Policy, s.MaxMemory), s.Addr)
		} else {
			add(Warning, fmt.Sprintf("maxmemory-policy %s would evict lock keys as soon as a maxmemory limit is set; set maxmemory-policy noeviction", s.Policy), s.Addr)
		}
	}
	t.persistenceFindings(s, add)
	if s.Role == "master" {
		switch {
		case t.cfg.WaitReplicas > 0 && s.Replicas < t.cfg.WaitReplicas:
			add(Problem, fmt.Sprintf("WithReplicaAck asks %d replica(s) to acknowledge, but %d are connected: this node never votes", t.cfg.WaitReplicas, s.Replicas), s.Addr)
		case t.cfg.WaitReplicas == 0 && s.Replicas > 0:
			add(Notice, fmt.Sprintf("has %d replica(s): if they can be promoted (Sentinel, Cluster), a failover can lose lock keys; WithReplicaAck makes a vote count only once replicas have the write", s.Replicas), s.Addr)
		}
	}
	if d := t.cfg.TTL; s.Uptime < d && !t.cfg.RestartDetection {
		add(Notice, fmt.Sprintf("up only %v, less than the TTL %v: if it restarted empty it may hold fewer locks than it granted; restart detection (the default, off with WithRestartDetection(false)) waits for that", s.Uptime, d), s.Addr)
	}
}

// persistenceFindings grades what a server keeps of its locks across a
// crash, given restart detection and fencing.
func (t *Tools) persistenceFindings(s ServerFacts, add addFinding) {
	switch {
	case !s.AOF && t.cfg.RestartDetection:
		if t.cfg.Fencing {
			add(Warning, "persistence off (appendonly no): restart detection keeps a crashed node out while its locks expire, but its fencing counters are lost, so tokens may go back after a crash; set appendonly yes and appendfsync always", s.Addr)
		} else {
			add(Notice, "persistence off (appendonly no): a crash loses its locks; restart detection keeps it from voting until they have expired", s.Addr)
		}
	case !s.AOF:
		msg := "persistence off (appendonly no): after a crash and restart it forgets the locks it granted and may grant them again while the holder still runs"
		if s.Save != "" {
			msg = fmt.Sprintf("no AOF, only RDB snapshots (save %q): a crash loses every lock granted since the last snapshot, so it may grant them again while the holder still runs", s.Save)
		}
		add(Warning, msg+"; set appendonly yes with appendfsync always, or drop WithRestartDetection(false) (restart detection is on by default for nodes without it)", s.Addr)
	case s.AppendFsync != "" && s.AppendFsync != "always":
		sev := Notice
		if t.cfg.Fencing && !t.cfg.RestartDetection {
			sev = Warning
		}
		add(sev, fmt.Sprintf("appendonly yes with appendfsync %s: a power loss can lose the last writes (lock grants, fencing counters); appendfsync always keeps them", s.AppendFsync), s.Addr)
	}
}

// sharedServerFindings flags one server reached through several nodes
// (byRun groups the servers by run_id): it votes more than once.
func sharedServerFindings(byRun map[string][]ServerFacts, add addFinding) {
	runs := make([]string, 0, len(byRun))
	for id := range byRun {
		runs = append(runs, id)
	}
	slices.Sort(runs)
	for _, id := range runs {
		group := byRun[id]
		nodes := map[string]bool{}
		var addrs []string
		for _, s := range group {
			nodes[s.Node] = true
			addrs = append(addrs, s.Addr)
		}
		if len(nodes) > 1 {
			add(Problem, fmt.Sprintf("the same server (run_id %.8s…) is reached through %d nodes: it votes %d times, so a \"majority\" can be fewer servers than it looks; give each node a distinct server", id, len(nodes), len(nodes)), addrs...)
		}
	}
}

// keyFindings grades the key prefix and where each lock's keys live on a
// Cluster.
func (t *Tools) keyFindings(r *Report, add addFinding) {
	if strings.ContainsAny(t.cfg.Prefix, "{}") {
		add(Warning, fmt.Sprintf("the key prefix %q has a brace: on a Cluster every lock's keys may hash to one slot (or a lock's keys to different slots); keep braces out of WithKeyPrefix", t.cfg.Prefix))
	}
	for _, p := range r.Placements {
		if slices.Contains(p.Slots, -1) || slices.Min(p.Slots) != slices.Max(p.Slots) {
			add(Problem, fmt.Sprintf("the keys of lock %q are in slots %v, not one slot: the scripts would fail (CROSSSLOT); check WithKeyPrefix", p.Name, p.Slots), p.Node)
		}
	}
}
