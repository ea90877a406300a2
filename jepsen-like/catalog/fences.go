package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/node"
)

// FenceStart is the value a cell presets its fencing counters to, picked
// by its seed just below a digit boundary (10¹⁰, 10¹¹ or 10¹², less
// 28–30), so the run's tokens cross one (9999999999→10000000000, …) and a
// comparison of tokens as strings shows. The boundaries are above 2³²:
// the library seeds a counter below that from the node's clock (a counter
// INCR made from nothing, internal/node's fenceSeeded). Left alone, a
// counter starts at its node's clock in microseconds (16 digits) and
// crosses no boundary in a run.
func FenceStart(seed uint64) int64 {
	below := []int64{1e10, 1e11, 1e12}[seed%3]
	// 28–30 below, not 1–3: an attempt counts a counter up on every node
	// it reaches even when refused, so contended first grants of a run
	// came out above the boundary (sim TestGuardedTokensCrossDigitBoundary
	// saw its first accepted token at the preset + 6), and nothing crossed.
	return below - 30 + int64(seed/3%3)
}

// FenceNames are the lock names whose fencing counters a cell of kind k
// presets: the names its workers take (name, the all workload's three,
// the batched workload's shared one and each caller's own).
func FenceNames(k workload.LockKind, name string, clients int) []string {
	switch k {
	case workload.All:
		return []string{name + "/a", name + "/b", name + "/c"}
	case workload.Batched:
		out := []string{name}
		for w := range clients {
			for i := 1; i < workload.BatchCallers; i += 2 {
				out = append(out, fmt.Sprintf("%s/c%d/%d", name, w, i))
			}
		}
		return out
	}
	return []string{name}
}

// FenceRetention is the expiry of a preset counter: the library's default
// retention of fencing counters (WithFenceRetention), which every mode
// keeps.
const FenceRetention = 7 * 24 * time.Hour

// PresetFences sets the fencing counter of every name on every client's
// node to start, with the library's retention as its expiry, before the
// first acquire (the counters' key is node.Keys' Fence). The counters are
// written whether or not the mode fences: a mode without fencing never
// reads them.
func PresetFences(ctx context.Context, clients []redis.UniversalClient, names []string, start int64) error {
	for _, c := range clients {
		n, err := node.New(c)
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := c.Set(ctx, n.Keys(name).Fence, start, FenceRetention).Err(); err != nil {
				return fmt.Errorf("catalog: preset fencing counter of %q on %s: %w", name, n, err)
			}
		}
	}
	return nil
}
