package node

// KeepsFence reports that the fence Acquire returns with a grant was stored
// on the node, which keeps it or more (the fast path's INCR and the acquire
// script increment the counter in place; the script reads it for a repeated
// grant), not a value computed for the reply. The multilock core then skips
// writing back a token that a quorum of grants already reported
// (multilock.FenceKeeper): those nodes store it already.
func (l *Lock) KeepsFence() bool { return l.fencing }
