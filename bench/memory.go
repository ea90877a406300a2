package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/adapters"
	"github.com/quorumlock/quorumlock/localredis"
)

// memoryCaseID is what -cases matches to select the memory case.
const memoryCaseID = "memory server memory per held lock"

// MemRow is what one held lock costs a node: the keys it creates and the
// sum of their MEMORY USAGE, while held and after its release (what stays
// for good, e.g. a fencing counter). Keys that are the client's, not the
// lock's (there before the lock; quorumlock's label record, written once
// per client), are counted apart, as ClientKeys and ClientBytes.
type MemRow struct {
	Impl         string   `json:"impl"`
	Variant      string   `json:"variant"`
	HeldKeys     []string `json:"held_keys"`
	HeldBytes    int64    `json:"held_bytes"`
	ReleasedKeys int      `json:"released_keys"`
	ReleaseBytes int64    `json:"released_bytes"`
	ClientKeys   []string `json:"client_keys,omitempty"`
	ClientBytes  int64    `json:"client_bytes,omitempty"`
}

// memoryCase holds one lock of each implementation on an empty node and
// sums MEMORY USAGE (SAMPLES 0: exact) over every key the node then has,
// less the client's own keys (MemRow.ClientKeys).
// It runs on servers[0], flushed before each implementation; nothing else
// uses that node meanwhile (the cases run one after another).
func memoryCase(ctx context.Context, s *localredis.Server) ([]MemRow, error) {
	admin := s.Client()
	defer admin.Close()
	impls := []struct {
		variant string
		cfg     adapters.Config
	}{
		{"default", adapters.Config{Kind: adapters.Quorumlock}},
		{"fencing", adapters.Config{Kind: adapters.Quorumlock, Fencing: true}},
		{"default", adapters.Config{Kind: adapters.Redsync}},
		{"default", adapters.Config{Kind: adapters.Redislock}},
		{"default", adapters.Config{Kind: adapters.Rueidislock}},
	}
	var out []MemRow
	for _, im := range impls {
		if err := admin.FlushAll(ctx).Err(); err != nil {
			return nil, err
		}
		c := redis.NewClient(localredis.ClientOptions(s.Addr()))
		row, err := memoryOf(ctx, admin, c, im.cfg)
		_ = c.Close()
		if err != nil {
			return nil, fmt.Errorf("memory of %s: %w", im.cfg.Kind, err)
		}
		row.Impl, row.Variant = string(im.cfg.Kind), im.variant
		out = append(out, row)
	}
	return out, admin.FlushAll(ctx).Err()
}

func memoryOf(ctx context.Context, admin, c *redis.Client, cfg adapters.Config) (MemRow, error) {
	cfg.TTL = time.Minute
	l, err := adapters.New([]redis.UniversalClient{c}, cfg)
	if err != nil {
		return MemRow{}, err
	}
	defer l.Close()
	m, err := l.Mutex("memory-probe")
	if err != nil {
		return MemRow{}, err
	}
	// Keys there before the lock, and quorumlock's label records
	// (written in the background at a client's first lease), are the
	// client's, not the lock's.
	before, err := keyBytes(ctx, admin)
	if err != nil {
		return MemRow{}, err
	}
	client := map[string]int64{}
	split := func(kb map[string]int64) (keys []string, bytes int64) {
		for k, n := range kb {
			if _, ok := before[k]; ok || strings.HasPrefix(k, labelKeyPrefix) {
				client[k] = n
				continue
			}
			keys = append(keys, k)
			bytes += n
		}
		slices.Sort(keys)
		return keys, bytes
	}
	split(before)
	lease, err := m.TryLock(ctx)
	if err != nil {
		return MemRow{}, err
	}
	held, err := keyBytes(ctx, admin)
	if err != nil {
		return MemRow{}, err
	}
	var row MemRow
	row.HeldKeys, row.HeldBytes = split(held)
	if err := lease.Unlock(ctx); err != nil {
		return row, err
	}
	released, err := keyBytes(ctx, admin)
	// quorumlock's label record goes out in the background at the first
	// lease: give it a moment to land, to count it in the client's column.
	for wait := 0; err == nil && cfg.Kind == adapters.Quorumlock && !hasPrefix(released, labelKeyPrefix) && wait < 100; wait++ {
		time.Sleep(10 * time.Millisecond)
		released, err = keyBytes(ctx, admin)
	}
	var relKeys []string
	relKeys, row.ReleaseBytes = split(released)
	row.ReleasedKeys = len(relKeys)
	for k, n := range client {
		row.ClientKeys = append(row.ClientKeys, k)
		row.ClientBytes += n
	}
	slices.Sort(row.ClientKeys)
	return row, err
}

// labelKeyPrefix starts quorumlock's label records (node.Node.LabelKey with
// the default prefix): one per client and node, not per lock.
const labelKeyPrefix = "quorumlock:client:"

func hasPrefix(kb map[string]int64, p string) bool {
	for k := range kb {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// keyBytes is MEMORY USAGE (SAMPLES 0) of every key on the node.
func keyBytes(ctx context.Context, c *redis.Client) (map[string]int64, error) {
	out := map[string]int64{}
	it := c.Scan(ctx, 0, "*", 100).Iterator()
	for it.Next(ctx) {
		k := it.Val()
		n, err := c.MemoryUsage(ctx, k, 0).Result()
		if err != nil {
			return nil, fmt.Errorf("MEMORY USAGE %s: %w", k, err)
		}
		out[k] = n
	}
	return out, it.Err()
}

func printMemory(w io.Writer, rows []MemRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Server memory per held lock (one node, MEMORY USAGE SAMPLES 0 of every key)\n\n")
	fmt.Fprintf(w, "| impl | keys while held | bytes while held | keys left after release | bytes left | per client, once (not per lock) |\n|---|---|--:|--:|--:|---|\n")
	for _, r := range rows {
		label := r.Impl
		if r.Variant != "default" {
			label += " " + r.Variant
		}
		client := "—"
		if len(r.ClientKeys) > 0 {
			client = fmt.Sprintf("%d B (%s)", r.ClientBytes, joinKeys(r.ClientKeys))
		}
		fmt.Fprintf(w, "| %s | %d (%s) | %d | %d | %d | %s |\n", label, len(r.HeldKeys), joinKeys(r.HeldKeys), r.HeldBytes, r.ReleasedKeys, r.ReleaseBytes, client)
	}
}

func joinKeys(ks []string) string {
	if len(ks) == 0 {
		return ""
	}
	return "`" + strings.Join(ks, "`, `") + "`"
}

// memoryChecks is the target: held-lock memory without fencing
// at most 1.2× redislock's.
func memoryChecks(rows []MemRow) []Check {
	var ql, rl *MemRow
	for i := range rows {
		switch {
		case rows[i].Impl == string(adapters.Quorumlock) && rows[i].Variant == "default":
			ql = &rows[i]
		case rows[i].Impl == string(adapters.Redislock):
			rl = &rows[i]
		}
	}
	if ql == nil || rl == nil || rl.HeldBytes == 0 {
		return nil
	}
	x := float64(ql.HeldBytes) / float64(rl.HeldBytes)
	return []Check{{Target: "memory per held lock: quorumlock ÷ redislock ≤ 1.20×",
		Measured: fmt.Sprintf("%.2f× (%d vs %d bytes)", x, ql.HeldBytes, rl.HeldBytes), Pass: x <= 1.2}}
}
