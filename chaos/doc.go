// Package chaos runs real Redis clusters with a toxiproxy in front of every
// node and every replication link, and injects the faults a distributed
// lock claims to survive (or shows that it does not).
//
// # Clusters
//
// Start (or StartT in a test) brings up a Topology with one call:
//
//   - independent masters (Topology.Masters: 1, 3, 5, 7 for RedLock), named
//     m0, m1, …;
//   - master+replica groups (Topology.Groups) g0, g1, … with nodes g0n0
//     (master at start), g0n1 …;
//   - optionally redis-sentinel processes watching each group
//     (Topology.Sentinels, usually 3) for real automatic failover.
//
// Every node has a client proxy (Node.Proxy, named like the node) that
// clients dial (Node.Addr, Node.Options, Cluster.Addrs). Group nodes also
// have a peer proxy (Node.PeerProxy, "g0n0-peer") that carries replication
// and sentinel traffic: replicas replicate from it and every node announces
// it (replica-announce-port), so a group's master can be cut off from its
// replicas and sentinels while clients still reach it — a split brain.
// Harness commands go through Node.Admin, which bypasses the proxies.
//
// The proxies live in an embedded toxiproxy (github.com/Shopify/toxiproxy/v2)
// whose HTTP API is served on a loopback port (Cluster.ToxiproxyURL), so
// toxiproxy-cli and the official client see a running scenario.
//
// Backends: Local (default) runs redis-server processes through the
// project's launcher, localredis. Docker runs containers with
// testcontainers-go when a Docker engine answers (DockerAvailable probes it
// in at most a few seconds; nothing else needs Docker). Connect uses given
// Endpoints — addresses plus a toxiproxy HTTP API — e.g. the
// docker-compose.yml at the repository root (ComposeEndpoints).
//
// # Faults
//
// A Fault has Inject, Recover and String, and is a plain value:
//
//	faults := []chaos.Fault{
//		&chaos.Partition{Proxy: n.Proxy()},             // black hole, both ways
//		&chaos.Partition{Proxy: n.Proxy(), Loud: true}, // connection refused
//		&chaos.ReplyLoss{Proxy: n.Proxy()},             // requests run, replies vanish
//		&chaos.Latency{Proxy: n.Proxy(), Latency: 50 * time.Millisecond, Jitter: 20 * time.Millisecond},
//		&chaos.Bandwidth{Proxy: n.Proxy(), KBps: 1},
//		&chaos.Pause{Node: n},                          // SIGSTOP / SIGCONT
//		&chaos.Crash{Node: n},                          // kill -9, restart on Recover
//		&chaos.Crash{Node: n, PowerLoss: true, Restart: true},
//		&chaos.CutLink{Group: g},                       // master cut from replicas
//		&chaos.Promote{Group: g},                       // manual failover, split brain
//		&chaos.SentinelFailover{Group: g},              // sentinels fail over by themselves
//		&chaos.ClockSkew{Node: n, Rate: 2},             // libfaketime: clock runs twice as fast
//		&chaos.EmulatedClockSkew{Node: n, Match: "lock:*", Jump: time.Second},
//		&chaos.ClientPause{Name: "worker-1"},           // the workload calls Wait
//	}
//
// NodeFaults builds the usual list for one node.
//
// # Schedules and the nemesis
//
// A Schedule is a list of Steps (at offset At inject, hold for Hold,
// recover). A Nemesis picks faults at random from a seed, one at a time
// (rest, inject, hold, heal, repeat); the same seed replays the same moves
// (Nemesis.Moves). Both write every Inject and Recover with timestamps to a
// Recorder, whose Windows give the intervals a report draws.
//
// # Running the suite
//
//	go test -race ./chaos/                                  # every fault against real servers, well under 5 min
//	go test -race -run TestSoak ./chaos/ -args -chaos.soak=10m [-chaos.seed=N]
//
// The soak test runs a random nemesis over every fault of a five-master
// cluster and a sentinel-watched group; it logs its seed for replay.
//
// # Environment
//
// The local backend needs redis-server (and redis-sentinel for sentinels).
// ClockSkew needs libfaketime and gcc: Debian's libfaketime deadlocks
// redis-server at start, so a tiny preload shim is compiled at run time
// (BuildFaketimeShim) and loaded after it.
package chaos
