package node

// KeepsFence reports that the fence Acquire returns with a grant is the
// stored counter (the acquire script increments it in place, or reads it for
// a repeated grant), not a value computed for the reply. The multilock core
// then skips writing back a token that a quorum of grants already reported
// (multilock.FenceKeeper): those nodes store it already.
func (l *Lock) KeepsFence() bool { return l.fencing }
