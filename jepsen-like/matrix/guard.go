package matrix

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/chaos"
	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/localredis"
)

// presetFences sets the fencing counters of the cell's lock names on every
// lock node (each master, or the group's master) to the seed's start
// below a digit boundary (catalog.FenceStart), before the first acquire.
func presetFences(ctx context.Context, cl *chaos.Cluster, k workload.LockKind, workers int, seed uint64) error {
	var opts []*redis.Options
	for _, n := range cl.Masters {
		opts = append(opts, n.Options())
	}
	for _, g := range cl.Groups {
		opts = append(opts, g.Options())
	}
	clients := make([]redis.UniversalClient, len(opts))
	for i, o := range opts {
		clients[i] = redis.NewClient(o)
	}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return catalog.PresetFences(ctx, clients, catalog.FenceNames(k, LockName, k.Clients(workers)), catalog.FenceStart(seed))
}

// startGuard starts the guarded workload's guard: a redis-server of its
// own, beside the cluster and outside every fault, running the project's
// guard script (guard.Redis). stop ends it.
func startGuard(ctx context.Context) (g workload.Guard, stop func(), err error) {
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	srv, err := localredis.Start(sctx, localredis.Config{})
	if err != nil {
		return nil, func() {}, err
	}
	c := srv.Client()
	return workload.RedisGuard(c, workload.GuardKey), func() {
		_ = c.Close()
		_ = srv.Stop()
	}, nil
}
