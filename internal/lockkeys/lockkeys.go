// Package lockkeys names the keys of a lock that are meant to live without
// an expiry, and finds the ones that are not meant to but do.
//
// Every key a lock writes carries a TTL, so a holder that dies leaves
// nothing behind for longer than its claim. The counters that must keep
// increasing while a name is used (the fencing counter, the fair lock's
// ticket counter) carry a long one, re-armed on use; a fencing counter
// made by an earlier version has none until its next use, so it is
// allowed. Any other key under the lock prefix with no TTL is a lock that
// may never be free again.
package lockkeys

import (
	"context"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix starts every key and channel of the node package unless
// the node is given another prefix.
const DefaultPrefix = "quorumlock:"

// PersistentSuffixes are the endings of the keys that may live without
// expiry (after the hash tag "{name}").
var PersistentSuffixes = []string{
	"}:fence", // fencing counter of an earlier version (node.Keys.Fence)
}

// Persistent reports whether key is allowed to have no expiry.
func Persistent(key string) bool {
	for _, s := range PersistentSuffixes {
		if strings.HasSuffix(key, s) {
			return true
		}
	}
	return false
}

// WithoutExpiry scans c (SCAN, never KEYS) for keys starting with prefix
// that have no TTL and are not Persistent, sorted.
func WithoutExpiry(ctx context.Context, c redis.Cmdable, prefix string) ([]string, error) {
	var out []string
	iter := c.Scan(ctx, 0, escape(prefix)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if Persistent(k) {
			continue
		}
		pt, err := c.PTTL(ctx, k).Result()
		if err != nil {
			return out, err
		}
		// -1: no expiry; -2: gone since the scan. go-redis returns the
		// reply as a Duration of that many nanoseconds.
		if pt == -1 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, iter.Err()
}

// escape quotes the glob characters of a SCAN MATCH pattern.
func escape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return r.Replace(s)
}
