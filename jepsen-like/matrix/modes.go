package matrix

import (
	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/quorum"
)

// The modes are the catalog's (package catalog); these names keep the
// matrix's API.
type (
	// LockParams is catalog.LockParams.
	LockParams = catalog.LockParams
	// LockFunc is catalog.LockFunc.
	LockFunc = catalog.LockFunc
	// Mode is catalog.Mode.
	Mode = catalog.Mode
)

// Modes are the catalog's lock configurations, in report order. Peers
// (redsync, redislock) are added by the bench module's runner with their
// own LockFunc; see Config.Modes.
var Modes = catalog.Modes

// QuorumLock returns the LockFunc of the quorum lock with opts
// (catalog.QuorumLock).
func QuorumLock(opts ...quorum.Option) LockFunc { return catalog.QuorumLock(opts...) }

// FindMode returns the mode with the given id among modes.
func FindMode(modes []Mode, id string) (Mode, bool) { return catalog.FindMode(modes, id) }

// SelectModes returns the modes named in a comma-separated list ("" or
// "all": every mode), in the list's order.
func SelectModes(all []Mode, list string) ([]Mode, error) { return catalog.SelectModes(all, list) }

func modeIDs(ms []Mode) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}
