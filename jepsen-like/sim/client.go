package sim

import (
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ClientOptions are go-redis options for client to reach addr (a node or
// group name) on nw: the settings package node recommends for a lock
// (deadlines honoured, no hidden retries) and the network's dialer.
func ClientOptions(nw *Net, client, addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		Dialer:                nw.Dialer(client),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           time.Second,
		// The pool's size is fixed, not ten per processor: TestCell runs
		// on one processor and other tests on all, and a seed must run
		// the same pool either way.
		PoolSize: 10,
		// Pipelines share the one pool: a second pool that a pipeline
		// borrows from without waiting, and leaves for the main pool
		// when it is full, takes a different pool depending on which of
		// the goroutines of one instant asked first.
		PipelinePoolSize: -1,
		// Maintenance notifications would resolve addr in DNS (and send
		// CLIENT MAINT_NOTIFICATIONS): a node name is no host name, and a
		// lookup leaves the bubble.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}
