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
