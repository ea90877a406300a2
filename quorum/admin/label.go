package admin

import "strings"

// OwnerSep separates the label of the client that made an owner from its
// UUID: "billing-3#2f1c…:7" (quorum.WithLabel).
const OwnerSep = "#"

// OwnerLabel is the human part of an owner as Inspect and List return
// them: the label of the client that made it (quorum.WithLabel), or the
// whole owner when it has none (an owner given with quorum.WithOwner).
func OwnerLabel(owner string) string {
	if i := strings.LastIndex(owner, OwnerSep); i > 0 {
		return owner[:i]
	}
	return owner
}

// Label is the human name of owner for operators: the label its client
// recorded on the nodes (quorum.WithLabel; node.State.Labels), else
// OwnerLabel(owner) (an owner of an earlier version, "label#uuid:seq", or
// one given with quorum.WithOwner, or an id whose label expired or was
// lost with a node's data).
func (in Inspection) Label(owner string) string {
	for _, s := range in.Nodes {
		if l, ok := s.Labels[owner]; ok {
			return l
		}
	}
	return OwnerLabel(owner)
}
