// Package admin holds the operator's side of quorumlock: what a person or
// a tool looking after the nodes needs, and a lock user does not.
//
//   - Check is the preflight check: facts per server (role, persistence,
//     eviction policy, uptime), key placement on Cluster nodes, and
//     findings graded Notice, Warning or Problem. quorum.WithPreflight runs
//     it in quorum.New.
//   - Inspect and List read locks on every node and conclude a Verdict:
//     held by a quorum, leftovers on a minority, free, or unknown.
//   - ForceUnlock removes a lock on every node, records who did it, and
//     wakes its waiters.
//
// Get the tools of a client with quorum.Client.Admin:
//
//	report, err := client.Admin().Check(ctx, "orders/42")
//	ins, err := client.Admin().Inspect(ctx, "orders/42")
//
// The command line (quorumlock check, locks, unlock) and the web console
// are built on this package.
package admin
