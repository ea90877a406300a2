package mutants

// electreadsMutants break the election's register: what followers read of
// a term's value (Leader, Observe) against what its leader proclaimed,
// judged as a linearizable register per term (checker's election values).
// Both show only where nodes fail while a leader proclaims.
var electreadsMutants = []Mutant{
	{
		Name: "election-read-from-minority",
		Bug:  "Leader returns the highest value any node of the term has, without writing it back to a quorum: a later read of another majority goes back to the older value",
		File: "quorum/election.go",
		Old:  "\tif err := e.writeBack(ctx, states, errs, info); err != nil {\n",
		New:  "\tif err := error(nil); err != nil {\n",
		// The quick matrix's election cells; cells with nodes failing
		// while leaders proclaim judge it best.
		Cells: []Cell{{"redlock-3", "holder-isolated", "election"}},
	},
	{
		Name:  "proclaim-ok-below-quorum",
		Bug:   "Proclaim does not count the nodes that took the value and reports success below a quorum (none at all, for a leader cut off): followers keep reading the old value",
		File:  "quorum/election.go",
		Old:   "\tneed := c.need()\n\tif len(prepared) < need {\n",
		New:   "\tneed := 0\n\tif len(prepared) < need {\n",
		Cells: []Cell{{"redlock-3", "holder-isolated", "election"}},
	},
}
