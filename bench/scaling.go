package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/adapters"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// scalingCaseID is what -cases matches to select the scaling case.
const scalingCaseID = "scaling"

// Sizes of the scaling case: a quorum of scaleNodes nodes, each either a
// standalone server or a Redis Cluster of scaleMasters masters, driven by
// scaleGoroutines goroutines on distinct names.
const (
	scaleNodes      = 3
	scaleMasters    = localredis.MinClusterMasters
	scaleGoroutines = 64
)

// The rows of the scaling case (CaseRow.Variant). The servers run
// fsync-always AOF, so by default the library does not check them for a
// restart (docs/defaults.md); the third row shows what that check costs
// where the Cluster's servers lack that persistence.
var (
	scaleStandalone = fmt.Sprintf("%d standalones", scaleNodes)
	scaleClusters   = fmt.Sprintf("%d clusters of %d masters", scaleNodes, scaleMasters)
	scaleClustersRD = scaleClusters + " + restart detection"
	// The same with as many goroutines per master as the standalones had
	// per node: a cluster's masters each see a third of the traffic, and
	// shorter pipelines cost more per command.
	scaleClustersFull = fmt.Sprintf("%s, %d goroutines", scaleClusters, scaleMasters*scaleGoroutines)
)

// scaleRestartDelay is the library's default restart delay (the default
// TTL): a node younger than this does not vote, so the case waits until
// the clusters are older before it measures.
const scaleRestartDelay = 10 * time.Second

// quorumOfClusters is scaleNodes Redis Clusters, each one node of a quorum.
type quorumOfClusters struct {
	Clusters []*localredis.Cluster
}

// startQuorumOfClusters starts n clusters of masters masters each, at the
// same time. On error every server it started is stopped.
func startQuorumOfClusters(ctx context.Context, n, masters int) (*quorumOfClusters, error) {
	q := &quorumOfClusters{Clusters: make([]*localredis.Cluster, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.Clusters[i], errs[i] = localredis.StartCluster(ctx, masters, localredis.Config{})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		q.Stop()
		return nil, err
	}
	return q, nil
}

// Servers are every master of every cluster.
func (q *quorumOfClusters) Servers() []*localredis.Server {
	var out []*localredis.Server
	for _, c := range q.Clusters {
		if c != nil {
			out = append(out, c.Masters...)
		}
	}
	return out
}

// Clients returns one new cluster client per cluster (caller closes them).
func (q *quorumOfClusters) Clients() []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(q.Clusters))
	for i, c := range q.Clusters {
		out[i] = c.Client()
	}
	return out
}

// Stop stops every server; safe to call more than once.
func (q *quorumOfClusters) Stop() {
	for _, c := range q.Clusters {
		if c != nil {
			_ = c.Stop()
		}
	}
}

// scaleLayout is one row of the scaling case: a quorum and its servers.
type scaleLayout struct {
	e       *entry
	g       int // goroutines
	servers []*localredis.Server
	clients []redis.UniversalClient
}

// scalingCase runs Lock+Unlock by scaleGoroutines goroutines on distinct
// names against a quorum of standalones and a quorum of clusters, the two
// interleaved round by round (the order swapped every round), and returns
// one CaseRow each. Server CPU per op is the sum over the layout's servers
// of INFO's used_cpu_sys + used_cpu_user, before and after each round, per
// acquisition: every thread of every server, the cluster bus included.
// Every server it starts is stopped before it returns.
func scalingCase(ctx context.Context, o options, log io.Writer) ([]CaseRow, error) {
	fmt.Fprintf(log, "starting %d standalones and %d clusters of %d masters…\n", scaleNodes, scaleNodes, scaleMasters)
	alone, err := localredis.StartN(ctx, scaleNodes, localredis.Config{})
	if err != nil {
		return nil, err
	}
	defer localredis.StopAll(alone)
	started := time.Now()
	qc, err := startQuorumOfClusters(ctx, scaleNodes, scaleMasters)
	if err != nil {
		return nil, err
	}
	defer qc.Stop()

	var aloneClients []redis.UniversalClient
	for _, s := range alone {
		aloneClients = append(aloneClients, s.Client())
	}
	layouts := []*scaleLayout{
		{servers: alone, clients: aloneClients},
		{servers: qc.Servers(), clients: qc.Clients()},
		{servers: qc.Servers(), clients: qc.Clients()},
		{servers: qc.Servers(), clients: qc.Clients()},
	}
	for i, variant := range []string{scaleStandalone, scaleClusters, scaleClustersRD, scaleClustersFull} {
		l := layouts[i]
		defer func() {
			for _, c := range l.clients {
				_ = c.Close()
			}
		}()
		cfg := adapters.Config{Kind: adapters.Quorumlock}
		l.g = scaleGoroutines
		if variant == scaleClustersFull {
			l.g = scaleMasters * scaleGoroutines
		}
		if variant == scaleClustersRD {
			cfg.Quorum = []quorum.Option{quorum.WithRestartDetection(true)}
		}
		lk, err := adapters.New(l.clients, cfg)
		if err != nil {
			return nil, err
		}
		defer lk.Close()
		l.e = &entry{impl: adapters.Quorumlock, variant: variant, locker: lk}
	}
	if wait := time.Until(started.Add(scaleRestartDelay + 500*time.Millisecond)); wait > 0 {
		fmt.Fprintf(log, "waiting %v until the clusters are older than the restart delay…\n", wait.Round(100*time.Millisecond))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}

	s := &spec{id: scalingCaseID, nodes: scaleNodes, goroutines: scaleGoroutines, metric: "Lock+Unlock",
		title: fmt.Sprintf("scaling: Lock+Unlock, quorum of %d standalones or of %d clusters of %d masters, %d goroutines (%d on the last row), distinct names",
			scaleNodes, scaleNodes, scaleMasters, scaleGoroutines, scaleMasters*scaleGoroutines)}
	name := func(l *scaleLayout) string { return "scaling:" + strings.ReplaceAll(l.e.variant, " ", "-") }
	start := time.Now()
	fmt.Fprintf(log, "%s …", s.title)
	for _, l := range layouts {
		pairs(l.g, o.dur/5)(ctx, l.e, name(l)+":warm")
	}
	for r := 0; r < o.rounds; r++ {
		for k := range layouts {
			l := layouts[(k+r)%len(layouts)]
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			runtime.GC()
			srvBefore, err := serversCPU(ctx, l.servers)
			if err != nil {
				return nil, err
			}
			cliBefore := selfCPU()
			smp := pairs(l.g, o.dur)(ctx, l.e, name(l))
			smp.clientCPU = selfCPU() - cliBefore
			srvAfter, err := serversCPU(ctx, l.servers)
			if err != nil {
				return nil, err
			}
			smp.serverCPU = srvAfter - srvBefore
			l.e.samples = append(l.e.samples, smp)
			fmt.Fprint(log, ".")
		}
	}
	fmt.Fprintf(log, " %v\n", time.Since(start).Round(100*time.Millisecond))
	out := make([]CaseRow, len(layouts))
	for i, l := range layouts {
		out[i] = summarize(s, l.e)
		out[i].Goroutines = l.g
		// The CPU busy figure of summarize assumes this process and the
		// servers shared the machine's cores, which they did.
	}
	return out, nil
}

// serversCPU sums used_cpu_sys + used_cpu_user from INFO cpu over servers.
func serversCPU(ctx context.Context, servers []*localredis.Server) (time.Duration, error) {
	var total time.Duration
	for _, s := range servers {
		c := s.Client()
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		info, err := c.Info(cctx, "cpu").Result()
		cancel()
		_ = c.Close()
		if err != nil {
			return 0, fmt.Errorf("INFO cpu on %s: %w", s.Addr(), err)
		}
		for _, k := range []string{"used_cpu_sys", "used_cpu_user"} {
			v, err := strconv.ParseFloat(infoField(info, k), 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu on %s: %s: %w", s.Addr(), k, err)
			}
			total += time.Duration(v * 1e9)
		}
	}
	return total, nil
}

// perCoreRate is acquisitions per second per server core: how many
// Lock+Unlock pairs one core of server CPU serves, all nodes of the quorum
// counted.
func perCoreRate(r *CaseRow) float64 {
	if r.ServersCPUusPerOp <= 0 {
		return 0
	}
	return 1e6 / r.ServersCPUusPerOp
}

// scalingNote is the last column of a scaling row: acquisitions per server
// core, and for the clusters the paired ratios to the standalones.
func scalingNote(res []CaseRow, r *CaseRow) string {
	note := fmt.Sprintf("%s acq/s per server core", rate(perCoreRate(r)))
	if r.Variant == scaleStandalone {
		return note
	}
	if a := find(res, scalingCaseID, scaleNodes, scaleGoroutines, adapters.Quorumlock, scaleStandalone); a != nil && a.OpsPerSec > 0 && a.ServersCPUusPerOp > 0 {
		note += fmt.Sprintf("; ÷ standalones: ops/s %.2f, server CPU/op %.2f", pairedRatio(r, a), r.ServersCPUusPerOp/a.ServersCPUusPerOp)
	}
	return note
}

// scalingChecks: moving from standalones to clusters must add capacity.
// With one core per server, a quorum's capacity is its servers × its
// acquisitions per server core, so the clusters' capacity over the
// standalones' is masters × the standalones' server CPU per acquisition ÷
// the clusters'.
func scalingChecks(res []CaseRow) []Check {
	a := find(res, scalingCaseID, scaleNodes, scaleGoroutines, adapters.Quorumlock, scaleStandalone)
	// The row with the same goroutines: each master then sees a third of
	// the traffic, the least favourable case for the clusters, and the row
	// that stays measurable on an overloaded machine (with 192 goroutines
	// on 2 busy cores, timed-out attempts inflate the CPU per acquisition).
	c := find(res, scalingCaseID, scaleNodes, scaleGoroutines, adapters.Quorumlock, scaleClusters)
	if a == nil || c == nil || a.ServersCPUusPerOp <= 0 || c.ServersCPUusPerOp <= 0 {
		return nil
	}
	x := float64(scaleMasters) * a.ServersCPUusPerOp / c.ServersCPUusPerOp
	return []Check{{
		Target: fmt.Sprintf("scaling: a quorum of %d clusters of %d masters (fsync-always, so no restart check, %d goroutines) serves more than %d standalones at one core per server ≥ 1.0×", scaleNodes, scaleMasters, scaleGoroutines, scaleNodes),
		Measured: fmt.Sprintf("%.2f× (%d × %s vs %d × %s acq/s per server core)", x,
			scaleNodes*scaleMasters, rate(perCoreRate(c)), scaleNodes, rate(perCoreRate(a))),
		Pass: x >= 1,
	}}
}
