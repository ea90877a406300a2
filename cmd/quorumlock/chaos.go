package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/jepsen-like/matrix"
)

const chaosSummary = "run the lock modes × fault scenarios matrix on local Redis servers, check every history, report (Markdown, JSON, HTML)"

func init() {
	register(&command{name: "chaos", summary: chaosSummary, run: runChaos})
}

// chaosProgress is where the progress display goes (stdout gets the table).
var chaosProgress io.Writer = os.Stderr

// runChaos is `quorumlock chaos`. The exit status is 1 when a mode
// expected safe under a scenario showed a violation (or a cell could not
// run), 2 for bad flags.
func runChaos(ctx context.Context, args []string, out io.Writer) error {
	var o matrix.Options
	fs := flags("chaos", chaosSummary, out)
	o.Register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	// Refused dials during partitions and crashes are the point here, not
	// news: keep go-redis quiet.
	redis.SetLogger(quietRedis{})
	err := matrix.Main(ctx, o, matrix.Modes, matrix.Scenarios, out, chaosProgress)
	if errors.Is(err, matrix.ErrUsage) {
		fmt.Fprintln(out, err)
		return errUsage
	}
	return err
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
