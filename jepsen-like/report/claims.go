package report

import "github.com/quorumlock/quorumlock/jepsen-like/checker"

// Source is a text from the literature that a claim comes from.
type Source struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// The sources the matrix tests claims from.
var (
	Kleppmann = Source{
		Name: `Kleppmann, "How to do distributed locking" (2016)`,
		URL:  "https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
	}
	RedlockSpec = Source{
		Name: `Redlock spec, "Distributed Locks with Redis" (redis.io)`,
		URL:  "https://redis.io/docs/latest/develop/use/patterns/distributed-locks/",
	}
	Antirez = Source{
		Name: `antirez, "Is Redlock safe?" (2016)`,
		URL:  "http://antirez.com/news/101",
	}
	JepsenEtcd = Source{
		Name: "Jepsen, etcd 3.4.3 analysis (2020)",
		URL:  "https://jepsen.io/analyses/etcd-3.4.3",
	}
)

// Claim is a statement about a lock configuration under a fault, from the
// literature, and the checks that bear on it.
type Claim struct {
	Source Source
	// Text paraphrases the claim (not a quotation).
	Text string
	// Property picks the checks whose violations count as evidence
	// (checker.Safety when empty).
	Property checker.Property
}

// String is "Source: text".
func (c Claim) String() string {
	if c.Source.Name == "" {
		return c.Text
	}
	return c.Source.Name + ": " + c.Text
}

// The claims the matrix tests. Each row says whether its mode and scenario
// are expected safe under the claim; the workload author picks the claim.
var (
	// ClaimPauseWithoutFencing: a client paused past its lease still acts
	// on it; the resource accepts its stale write unless it checks fencing
	// tokens. Expected unsafe for an unfenced resource under a client
	// pause longer than the TTL, whatever the lock.
	ClaimPauseWithoutFencing = Claim{Kleppmann,
		"a client paused past its lease expiry writes after the next holder; without fencing the resource accepts the stale write",
		checker.DataIntegrity}
	// ClaimFencingProtects: with monotonic fencing tokens checked by the
	// resource, the paused client's write is rejected. Expected safe for a
	// fenced resource with a lock whose tokens strictly increase.
	ClaimFencingProtects = Claim{Kleppmann,
		"a fencing token that increases with every grant, checked by the resource, rejects the paused client's stale write",
		checker.DataIntegrity}
	// ClaimClockJump: Redlock's safety rests on timing; a clock jump on a
	// lock node expires a key early and lets a second client in while the
	// first lease is still valid. Expected unsafe under a node clock jump.
	ClaimClockJump = Claim{Kleppmann,
		"a clock jump on a lock node expires the key early, so a second client acquires while the first lease is still valid",
		checker.LeaseExclusion}
	// ClaimFailoverLosesLocks: with asynchronous replication, a master that
	// fails before replicating a lock key lets a promoted replica grant the
	// lock again. Expected unsafe for failover without WAIT.
	ClaimFailoverLosesLocks = Claim{RedlockSpec,
		"with master-replica failover, asynchronous replication can lose a granted lock, so two clients hold it",
		checker.LeaseExclusion}
	// ClaimMajority: a majority of N independent masters, with the
	// validity reduced by elapsed time and drift, gives mutual exclusion
	// while the lease is valid, despite partitions or a minority of failed
	// nodes. Expected safe for redlock-N under such faults.
	ClaimMajority = Claim{RedlockSpec,
		"a majority of N independent masters keeps leases mutually exclusive while valid, despite partitions or a failed minority",
		checker.LeaseExclusion}
	// ClaimRestartNeedsPersistence: a node that restarts without the lock
	// keys (no persistence, no delayed restart) can vote for a second
	// holder. Expected unsafe for crash-restart without persistence,
	// expected safe with fsync=always AOF or a restart delayed past the
	// max TTL.
	ClaimRestartNeedsPersistence = Claim{RedlockSpec,
		"a node restarted without persistence forgets its keys and can help grant the lock twice; fsync=always or a delayed restart prevents it",
		checker.LeaseExclusion}
	// ClaimValidityCheck: delays during acquisition are accounted for by
	// checking the remaining validity after acquiring; only a pause after
	// that check hurts, and it hurts every lock with auto-release. Expected
	// safe (lease exclusion) under latency and pauses during acquisition.
	ClaimValidityCheck = Claim{Antirez,
		"delays while acquiring are caught by the validity check after acquisition; only pauses after it matter, as for any lock with auto-release",
		checker.LeaseExclusion}
	// ClaimBoundedDrift: Redlock assumes clocks run at about the same rate,
	// not that they agree; a bounded drift rate is absorbed by the drift
	// allowance. Expected safe under rate drift within the drift factor.
	ClaimBoundedDrift = Claim{Antirez,
		"Redlock needs clocks with a bounded drift rate, not synchronised clocks; drift within the allowance keeps leases exclusive",
		checker.LeaseExclusion}
	// ClaimLeasesNotMutex: a lock built on leases cannot guarantee mutual
	// exclusion in an asynchronous system: a paused or slow holder keeps
	// acting after its lease expired. Expected unsafe (as the clients see
	// it) under client pauses, for every mode.
	ClaimLeasesNotMutex = Claim{JepsenEtcd,
		"locks built on leases cannot guarantee mutual exclusion: a paused holder still acts after its lease expired and another client acquired",
		checker.MutualExclusion}
)

// Claims lists every predefined claim.
var Claims = []Claim{
	ClaimPauseWithoutFencing, ClaimFencingProtects, ClaimClockJump,
	ClaimFailoverLosesLocks, ClaimMajority, ClaimRestartNeedsPersistence,
	ClaimValidityCheck, ClaimBoundedDrift, ClaimLeasesNotMutex,
}
