// Package console is a small web console for operators of quorumlock locks:
// one server-rendered page (no front-end build, every value escaped) that
// lists the locks on a quorum.Client's nodes with their holder, a TTL bar
// per node, the verdict (held by a quorum, leftovers on a minority, free,
// unknown), refreshes itself, and offers a force-unlock behind a
// confirmation.
//
// It lives apart from package quorum so the library does not pull in
// net/http.
//
// Security: the console serves on a loopback address by default; Serve
// refuses any other address unless a token is set (WithToken), and with a
// token every request must carry it (header "Authorization: Bearer <token>",
// header "X-Quorumlock-Token", or query "?token="), compared in constant
// time. Without a token, requests must name a loopback host (against DNS
// rebinding). Force-unlock is a POST that needs a per-process form key, the
// lock's name typed again as confirmation and the operator's name, which is
// recorded next to the lock (quorum.Client.ForceUnlock).
package console
