package sim

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// presetFences sets the fencing counters of the cell's lock names on every
// lock node to the seed's start below a digit boundary
// (catalog.FenceStart), through the network, before any worker runs.
func (e *env) presetFences() error {
	var clients []redis.UniversalClient
	for _, n := range e.allNodes() {
		if e.group != nil && n != e.group.Master() {
			continue // the replica gets it through replication
		}
		clients = append(clients, redis.NewClient(ClientOptions(e.nw, "preset", n.Name())))
	}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	k := e.c.kind()
	return catalog.PresetFences(ctx, clients, catalog.FenceNames(k, "sim", k.Clients(e.t.Workers)), catalog.FenceStart(e.c.Seed))
}

// guard starts the guarded workload's guard: a node of its own (no fault
// strikes it) running the project's guard script, and one client for every
// worker's writes.
func (e *env) guard() workload.Guard {
	n := NewNode(e.nw, "guard")
	cl := redis.NewClient(ClientOptions(e.nw, "guard-writer", n.Name()))
	e.mu.Lock()
	e.closers = append(e.closers, func() {
		_ = cl.Close()
		n.Close()
	})
	e.mu.Unlock()
	return workload.RedisGuard(cl, workload.GuardKey)
}
