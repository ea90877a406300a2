package node

// batchOf is the node's batcher, nil when it sends every command on its
// own.
func batchOf(n *Node) *batcher {
	t := n.t
	if g, ok := t.(guarded); ok {
		t = g.transport
	}
	l, ok := t.(line)
	if !ok {
		return nil
	}
	b, _ := l.carrier.(*batcher)
	return b
}

// isGuarded reports whether the node wraps every call for a client that
// ignores context deadlines.
func isGuarded(n *Node) bool { return !n.t.bounded() }
