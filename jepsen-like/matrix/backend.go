package matrix

import (
	"context"

	"github.com/quorumlock/quorumlock/chaos"
)

type backendKey struct{}

// WithBackend returns a context under which Run and RunCell start their
// clusters on backend b (chaos.Local when not set): the same cells on
// containers (chaos.Docker) for a side-by-side run. The Docker backend
// needs an engine (chaos.DockerAvailable); cells whose topology it cannot
// start come back as errors.
//
// A context value rather than a Config field so RunCell's signature stays
// as it is; the backend changes where servers run, not what a cell means.
func WithBackend(ctx context.Context, b chaos.Backend) context.Context {
	return context.WithValue(ctx, backendKey{}, b)
}

func backendOf(ctx context.Context) chaos.Backend {
	b, _ := ctx.Value(backendKey{}).(chaos.Backend)
	return b
}
