package node

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

	"github.com/quorumlock/quorumlock/internal/oneline"
)

// State is what one node knows of one lock.
type State struct {
	Present bool
	// Holders maps owner to hold count.
	Holders map[string]int64
	// Attempts is how many acquisition attempts hold shares.
	Attempts int
	// TTL is the remaining time to live (0 when absent).
	TTL time.Duration
	// Fence is the fencing counter (0 when none).
	Fence int64
	// Mode is the read-write mode ("read" or "write") of a read-write lock,
	// "" for a plain lock.
	Mode string
	// Forced is the last force-unlock recorded here (nil when none within
	// ForcedRecordTTL).
	Forced *Forced
	// Labels maps a holder to the label its client registered on this node
	// (SetLabel), for the holders that have one.
	Labels map[string]string
}

// Inspect reads the state of lock name on this node, in one transaction.
func (n *Node) Inspect(ctx context.Context, name string) (State, error) {
	st, err := n.InspectMany(ctx, []string{name})
	if err != nil {
		return State{}, err
	}
	return st[0], nil
}

// inspectBatch bounds the names read in one transaction by InspectMany, so a
// long list does not block the server in one go.
const inspectBatch = 128

// InspectMany reads the state of several locks, in transactions of up to 128
// names (each a consistent snapshot of its names). The states are in the
// order of names.
func (n *Node) InspectMany(ctx context.Context, names []string) ([]State, error) {
	out := make([]State, len(names))
	for lo := 0; lo < len(names); lo += inspectBatch {
		hi := min(lo+inspectBatch, len(names))
		if err := n.call(ctx, func(ctx context.Context) error {
			return n.t.reloaded(ctx, func() error { return n.inspect(ctx, names[lo:hi], out[lo:hi]) })
		}); err != nil {
			return nil, err
		}
		if err := n.call(ctx, func(ctx context.Context) error { return n.labels(ctx, out[lo:hi]) }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readLockLua reads a lock in either form, in one step, after the server's
// clock (seconds, microseconds): {s, us, "string", value} or
// {s, us, "hash", field, value, ...}, or {s, us} when absent. The clock is
// read here rather than by a TIME beside the script: a Redis Cluster
// transaction must touch one slot, and go-redis before v9.19 routed a TIME
// inside one as if it had a key, which the server refused with CROSSSLOT.
var readLockLua = record("read-lock", `local tm = redis.call('time')
local t = redis.call('type', KEYS[1]).ok
if t == 'string' then return {tm[1], tm[2], 'string', redis.call('get', KEYS[1])} end
if t == 'hash' then
  local h = redis.call('hgetall', KEYS[1])
  table.insert(h, 1, 'hash')
  table.insert(h, 1, tm[2])
  table.insert(h, 1, tm[1])
  return h
end
return tm`)

// readLock parses readLockLua's answer: the server's time, and the hash's
// fields, or for the string form of a single fast-path holder (FastValue)
// its owner.
func readLock(c *redis.Cmd) (now time.Time, hash map[string]string, owner string, isString bool, err error) {
	vs, err := c.StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return time.Time{}, nil, "", false, err
	}
	if len(vs) < 2 {
		return time.Time{}, nil, "", false, fmt.Errorf("quorumlock: reading a lock: %d values, want the server's time first", len(vs))
	}
	now, err = serverTime(vs[0], vs[1])
	if err != nil {
		return time.Time{}, nil, "", false, err
	}
	vs = vs[2:]
	hash = map[string]string{}
	switch {
	case len(vs) == 2 && vs[0] == "string":
		owner, _, isString = SplitFastValue(vs[1])
	case len(vs) > 0 && vs[0] == "hash":
		for i := 1; i+1 < len(vs); i += 2 {
			hash[vs[i]] = vs[i+1]
		}
	}
	return now, hash, owner, isString, nil
}

// serverTime parses TIME's two answers, seconds and microseconds.
func serverTime(sec, usec string) (time.Time, error) {
	s, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt(usec, 10, 64)
	if err := oneline.Join(err1, err2); err != nil {
		return time.Time{}, fmt.Errorf("quorumlock: the server's time %q %q: %w", sec, usec, err)
	}
	return time.Unix(s, us*1000), nil
}

func (n *Node) inspect(ctx context.Context, names []string, out []State) error {
	type cmds struct {
		lock   *redis.Cmd
		forced *redis.MapStringStringCmd
		pt     *redis.DurationCmd
		f      *redis.StringCmd
	}
	cs := make([]cmds, len(names))
	pipe := n.client.TxPipeline()
	for i, name := range names {
		k := n.Keys(name)
		// The lock is a hash, or a string while one fast-path acquisition
		// holds it (Lock.Acquire): a script reads either. EVAL, not
		// EVALSHA: a transaction cannot fall back on NOSCRIPT.
		cs[i] = cmds{lock: n.t.inTx(ctx, pipe, readLockLua, []string{k.Lock}), pt: pipe.PTTL(ctx, k.Lock), f: pipe.Get(ctx, k.Fence), forced: pipe.HGetAll(ctx, k.Forced)}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	for i, c := range cs {
		st := State{Holders: map[string]int64{}}
		// A read-write lock's shares carry deadlines on the server's clock.
		now, h, owner, isString, err := readLock(c.lock)
		if err != nil {
			return err
		}
		if isString {
			st.Present, st.Attempts, st.Holders[owner] = true, 1, 1
		}
		for field, v := range h {
			switch {
			case field == "\x00mode":
				// A read-write lock's mode (rw_acquire.lua).
				st.Mode = v
			case strings.HasPrefix(field, "\x00a:"):
				// A plain lock's share is "1"; a read-write lock's is
				// "r|w:deadline_ms:owner", and it alone names the owner.
				if owner, live, ok := rwShare(v, now); ok {
					if live {
						st.Attempts++
						st.Holders[owner]++
					}
					continue
				}
				st.Attempts++
			case strings.HasPrefix(field, "\x00"):
				// Other internal fields are hidden.
			default:
				cnt, _ := strconv.ParseInt(v, 10, 64)
				st.Holders[field] = cnt
			}
		}
		// A force's tombstone alone (Force.Hold) is no lock.
		_, tomb := h["\x00forced"]
		st.Present = st.Present || len(h) > 0 && !(tomb && len(h) == 1)
		if d := c.pt.Val(); d > 0 {
			st.TTL = d
		}
		st.Fence, _ = strconv.ParseInt(c.f.Val(), 10, 64)
		if r := c.forced.Val(); len(r) > 0 {
			at, _ := strconv.ParseInt(r["at"], 10, 64)
			by, via, _ := strings.Cut(r["by"], viaSep)
			st.Forced = &Forced{By: by, Via: via, At: time.UnixMilli(at), Removed: r["removed"] == "1"}
		}
		out[i] = st
	}
	return nil
}

// rwShare parses a read-write lock's share "r|w:deadline_ms:owner"; live is
// false once its deadline (on the server's clock now) has passed.
func rwShare(v string, now time.Time) (owner string, live, ok bool) {
	m, rest, ok1 := strings.Cut(v, ":")
	dl, owner, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || (m != "r" && m != "w") {
		return "", false, false
	}
	ms, err := strconv.ParseInt(dl, 10, 64)
	if err != nil {
		return "", false, false
	}
	return owner, ms > now.UnixMilli(), true
}

// Scan returns the names of the locks on this node whose names match the
// glob pattern ("*" or "" for all), sorted, each once. It walks the key space
// with SCAN (never KEYS, which blocks the server), count keys per step,
// asking only for keys named prefix{…} (a lock is a hash, or a string while
// one fast-path acquisition holds it): fencing counters, force-unlock records
// and other keys next to a lock end in ":…" and are not names. On a Cluster client
// it scans every master.
func (n *Node) Scan(ctx context.Context, pattern string, count int64) ([]string, error) {
	if pattern == "" {
		pattern = "*"
	}
	if count <= 0 {
		count = 100
	}
	open := n.prefix + "{"
	match := globEscape(open) + pattern + "}"
	seen := map[string]bool{}
	var mu sync.Mutex
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			var keys []string
			err := n.call(ctx, func(ctx context.Context) error {
				var e error
				keys, cursor, e = c.Scan(ctx, cursor, match, count).Result()
				return e
			})
			if err != nil {
				return err
			}
			mu.Lock()
			for _, k := range keys {
				if name, ok := lockName(open, k); ok {
					seen[name] = true
				}
			}
			mu.Unlock()
			if cursor == 0 {
				return nil
			}
		}
	}
	var err error
	if cc, ok := n.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, n.client)
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// globEscape escapes the characters SCAN's MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
