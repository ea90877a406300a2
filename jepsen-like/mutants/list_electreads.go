package mutants

// electreadsMutants break the election's register: what followers read of
// a term's value (Leader, Observe) against what its leader proclaimed,
// judged as a linearizable register per term (checker's election values).
// Both show only where nodes fail while a leader proclaims.
var electreadsMutants = []Mutant{
	{
		// Not "the highest value any node has, without write-back": a
		// Proclaim commits only after a quorum took the value, so a value
		// committed on a minority needs nodes failing between its two
		// round trips, which no cell makes often enough to judge.
		Name:  "election-read-from-minority",
		Bug:   "Leader takes the term's value from one node (the first that holds the term), not the latest a quorum has: a node that missed a Proclaim hands out the older value after a newer one was read",
		File:  "quorum/election.go",
		Old:   "\t\tif st.Rev > info.rev {\n",
		New:   "\t\tif info.rev == 0 {\n",
		Cells: []CellID{{"redlock-3", "partition-minority", "election"}},
		// A follower reads the stale node first only when its link is the
		// fastest: in the simulation, in about 2 seeds of 10.
		SimSeeds: 20,
	},
	{
		Name:  "proclaim-ok-below-quorum",
		Bug:   "Proclaim does not count the nodes that took the value and reports success below a quorum (none at all, for a leader cut off): followers keep reading the old value",
		File:  "quorum/election.go",
		Old:   "\tneed := c.need()\n\tif len(prepared) < need {\n",
		New:   "\tneed := 0\n\tif len(prepared) < need {\n",
		Cells: []CellID{{"redlock-3", "holder-isolated", "election"}},
		CI:    true,
	},
}
