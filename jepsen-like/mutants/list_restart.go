package mutants

// restartMutants are the bugs of restart detection and renewal: a node
// that restarted empty votes before the delay, and a renewal that a node
// accepts from an attempt that does not hold its key.
var restartMutants = []Mutant{
	{
		Name:  "restart-votes-at-once",
		Bug:   "restart detection compares a restarted node's run id and uptime with a delay of 0, so it votes at once",
		File:  "quorum/restart.go",
		Old:   "\tdelay := s.delay()\n",
		New:   "\tdelay := time.Duration(0)\n",
		Cells: []CellID{{"redlock-3+restart", "crash-restart-nopersist", ""}, {"redlock-3+restart", "crash-restart-minority", "renewed"}},
	},
	{
		Name: "renewal-from-non-owner",
		Bug:  "the extend script re-arms the key whoever holds it, and reports success where the key is gone",
		File: "internal/node/extend.lua",
		Old: "if type(v) == 'string' then\n  local _, att = split(v)\n  if att ~= ARGV[1] then return 0 end\n" +
			"elseif redis.call('hexists', KEYS[1], '\\0a:' .. ARGV[1]) == 0 then\n  return 0\nend\n",
		New: "",
		// A rolling restart: the holder "renews" on each restarted node
		// in turn and believes it holds while only one node has its key;
		// the restarted nodes then vote for another worker.
		Cells: []CellID{{"redlock-3+restart", "crash-restart-minority", "renewed"}},
	},
}
