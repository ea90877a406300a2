package node

// Package github.com/quorumlock/quorumlock/node is this package's public
// face: its Node wraps a *Node, and its PermissionError is this one's
// twin. It sets these functions in its init, so they are set in every
// program that can hold one of its values; the library's own packages
// cross the boundary with them instead of through an exported method that
// returns an internal type.
var (
	// ToPublic wraps n as a public *node.Node.
	ToPublic func(n *Node) any
	// FromPublic returns the *Node a public *node.Node wraps.
	FromPublic func(public any) *Node
	// PermissionAs is PermissionError.As for a target of the public type.
	PermissionAs func(e *PermissionError, target any) bool
)

// PublicNodes wraps each of ns as a public node; P is *node.Node of the
// public package.
func PublicNodes[P any](ns []*Node) []P {
	out := make([]P, len(ns))
	for i, n := range ns {
		out[i] = ToPublic(n).(P)
	}
	return out
}

// As lets errors.As find e as the public package's PermissionError, the
// type users name.
func (e *PermissionError) As(target any) bool {
	return PermissionAs != nil && PermissionAs(e, target)
}
