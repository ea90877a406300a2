package quorum

import (
	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/multilock"
)

// node.Lock reports stored fences, so the core may skip the write-back.
var _ multilock.FenceKeeper = (*node.Lock)(nil)
