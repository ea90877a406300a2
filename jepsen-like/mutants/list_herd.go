package mutants

// herdMutants break the wake-up of the lock's line of waiters: a release
// that wakes one waiter instead of every waiting client.
var herdMutants = []Mutant{
	{
		Name:  "wake-pops-untold",
		Bug:   "a release takes the head off the line of waiters but never tells it (nor anyone else), so waiters are left to their retry timers while the releaser takes the lock back",
		File:  "internal/node/release.lua",
		Old:   "      if ch and redis.call('publish', ch, seq) > 0 then\n",
		New:   "      if ch then\n",
		Cells: []CellID{{"redlock-3", "herd", ""}, {"single", "herd", ""}},
		CI:    true,
	},
}
