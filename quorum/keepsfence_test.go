package quorum

import (
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/node"
)

// node.Lock reports stored fences, so the core may skip the write-back.
var _ multilock.FenceKeeper = (*node.Lock)(nil)
