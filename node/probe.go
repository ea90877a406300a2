package node

import (
	"context"
	"strings"
	"time"
)

// Time is the node's clock (TIME).
func (n *Node) Time(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := n.call(ctx, func(ctx context.Context) error {
		var e error
		t, e = n.client.Time(ctx).Result()
		return e
	})
	if err != nil {
		return time.Time{}, err // t is not read: a wrapped call may still be running
	}
	return t, nil
}

// Info returns the fields of one INFO section (e.g. "server", "replication",
// "persistence") as a map.
func (n *Node) Info(ctx context.Context, section string) (map[string]string, error) {
	var s string
	err := n.call(ctx, func(ctx context.Context) error {
		var e error
		s, e = n.client.Info(ctx, section).Result()
		return e
	})
	if err != nil {
		return nil, err
	}
	return ParseInfo(s), nil
}

// ParseInfo parses INFO output into a map of field → value.
func ParseInfo(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}
