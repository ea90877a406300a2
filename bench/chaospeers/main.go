// Command chaospeers runs the chaos matrix of `quorumlock-lab chaos` with the
// peer implementations added as modes: go-redsync/redsync over 3 and 5
// independent masters, bsm/redislock and rueidis's rueidislock on one node, through the adapters
// of this module (so the library's own go.mod never requires them).
//
//	cd bench && go run ./chaospeers --quick                       # every mode, quorumlock's and the peers'
//	cd bench && go run ./chaospeers --quick --modes redsync-5,redlock-5 --json peers.json --html peers.html
//
// Flags, output and exit status are those of `quorumlock-lab chaos` (see
// docs/chaos-matrix.md). The peers lock with a fixed TTL (the workload's
// lease time) and their default retry delays; they hand out no fencing
// tokens and have no renewal, so the holder-isolated scenario runs them
// with their fixed TTL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/adapters"
	"github.com/quorumlock/quorumlock/jepsen-like/matrix"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// Peers are the peer modes, added after quorumlock's own.
var Peers = []matrix.Mode{
	{ID: "redsync-3", Summary: "go-redsync/redsync, majority of 3 independent masters",
		Masters: 3, Majority: true, FixedLease: true, Lock: peer(adapters.Redsync)},
	{ID: "redsync-5", Summary: "go-redsync/redsync, majority of 5 independent masters",
		Masters: 5, Majority: true, FixedLease: true, Lock: peer(adapters.Redsync)},
	{ID: "redislock", Summary: "bsm/redislock on one Redis master",
		Masters: 1, Majority: true, FixedLease: true, Lock: peer(adapters.Redislock)},
	{ID: "rueidislock", Summary: "redis/rueidis rueidislock on one Redis master (KeyMajority 1, renewal on)",
		Masters: 1, Majority: true, AbsoluteExpiry: true, LateLossSignal: true, Lock: peer(adapters.Rueidislock)},
}

// peer is the LockFunc of a peer implementation.
func peer(kind adapters.Impl) matrix.LockFunc {
	return func(p matrix.LockParams) (workload.Locker, func() error, error) {
		l, err := adapters.New(p.Clients, adapters.Config{Kind: kind, TTL: p.LeaseTime})
		if err != nil {
			return nil, nil, err
		}
		m, err := l.Mutex(p.Name)
		if err != nil {
			_ = l.Close()
			return nil, nil, err
		}
		return m, l.Close, nil
	}
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func main() {
	fs := flag.NewFlagSet("chaospeers", flag.ContinueOnError)
	var o matrix.Options
	o.Register(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	redis.SetLogger(quiet{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	modes := append(append([]matrix.Mode(nil), matrix.Modes...), Peers...)
	err := matrix.Main(ctx, o, modes, matrix.Scenarios, os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, matrix.ErrUsage):
		fmt.Fprintln(os.Stderr, "chaospeers:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "chaospeers:", err)
		os.Exit(1)
	}
}
