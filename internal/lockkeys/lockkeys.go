// Package lockkeys names the keys of a lock that are meant to live without
// an expiry, and finds the ones that are not meant to but do.
//
// Every key a lock writes carries a TTL, so a holder that dies leaves
// nothing behind for longer than its claim, except the counters that must
// keep increasing for as long as the name is used: the fencing counter and
// the fair lock's ticket counter. A key under the lock prefix with no TTL
// that is not one of those is a lock that may never be free again.
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

// PersistentSuffixes are the endings of the keys that live without expiry
// on purpose (after the hash tag "{name}").
var PersistentSuffixes = []string{
	"}:fence",  // fencing counter: tokens go on increasing (node.Keys.Fence)
	"}:ticket", // fair lock's ticket counter (node.FairKeys.Ticket)
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
