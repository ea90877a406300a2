package mutants

// guardMutants are guards that compare tokens the wrong way. The guarded
// workload writes through guard.Redis and its
// counters start just below a digit boundary, which the string form needs.
var guardMutants = []Mutant{
	{
		Name:  "guard-token-string-compare",
		Bug:   "the Redis guard compares a token with the last one as strings, so \"100\" is below \"99\"",
		File:  "guard/redis_set.lua",
		Old:   "local token = tonumber(ARGV[1])\n",
		New:   "local token = ARGV[1]\nlast = redis.call('get', KEYS[2]) or '0'\n",
		Cells: []CellID{{"redlock-5+fencing", "baseline", "guarded"}, {"redlock-5+fencing", "client-pause", "guarded"}},
		CI:    true,
	},
	{
		Name:  "guard-refuses-equal-token",
		Bug:   "the Redis guard refuses a token equal to the last one, so a holder's second write under its lease is refused",
		File:  "guard/redis_set.lua",
		Old:   "if token < last then\n",
		New:   "if token <= last then\n",
		Cells: []CellID{{"redlock-5+fencing", "baseline", "guarded"}, {"redlock-5+fencing", "client-pause", "guarded"}},
	},
}
