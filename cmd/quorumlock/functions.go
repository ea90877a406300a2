package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/quorumlock/quorumlock/internal/node"
)

const functionsSummary = "the Redis function library of quorum.WithFunctions: load it on every node, print it, or prune older versions"

func init() {
	register(&command{name: "functions", summary: functionsSummary, synopsis: "quorumlock functions [flags] load|code|prune", run: runFunctions})
}

// runFunctions is the operator's side of Functions mode (FCALL instead of
// EVAL): lock users that may not run FUNCTION LOAD need the library loaded
// on every node by someone who may.
func runFunctions(ctx context.Context, args []string, out io.Writer) error {
	fs := flags("functions", functionsSummary+"\n\n  load   load this version's library ("+node.FunctionsLibrary()+") on every node (needs FUNCTION LOAD)\n  code   print the library, for redis-cli -x FUNCTION LOAD REPLACE\n  prune  delete other versions' libraries (after a rolling upgrade)", out)
	nodes := nodesFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: give one of load, code, prune", errUsage)
	}
	action := fs.Arg(0)
	switch action {
	case "code":
		_, err := io.WriteString(out, node.FunctionsCode())
		return err
	case "load", "prune":
	default:
		return fmt.Errorf("%w: unknown action %q; give one of load, code, prune", errUsage, action)
	}
	c, err := dialNodes(*nodes)
	if err != nil {
		return err
	}
	defer c.Close()
	if action == "load" {
		if err := c.Admin().LoadFunctions(ctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "loaded %s\n", node.FunctionsLibrary())
		return nil
	}
	gone, err := c.Admin().DeleteOtherFunctions(ctx)
	if len(gone) > 0 {
		fmt.Fprintf(out, "deleted %s\n", strings.Join(gone, " "))
	}
	return err
}
