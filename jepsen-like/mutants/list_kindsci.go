package mutants

// kindsciMutants prove the judgements of the fair and all workloads that
// go beyond order and exclusion.
var kindsciMutants = []Mutant{
	{
		Name:  "fair-dead-waiter-stays",
		Bug:   "a fair lock's dead waiter is never dropped from the line (its entry outlives its deadline by an hour), so the waiters behind it wait forever (redisson#6150)",
		File:  "internal/node/fair_lib.lua",
		Old:   "  local dead = redis.call('zrangebyscore', KEYS[3], '-inf', now, 'LIMIT', 0, 1000)\n",
		New:   "  local dead = redis.call('zrangebyscore', KEYS[3], '-inf', now - 3600000, 'LIMIT', 0, 1000)\n",
		Cells: []CellID{{"redlock-3", "baseline", "fair"}, {"redlock-3", "node-pause", "fair"}},
	},
}
