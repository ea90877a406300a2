package mutants

// List is the mutants `quorumlock chaos --mutants` runs: the bugs a
// distributed lock is known to get wrong, each with the cells meant to catch
// it.
var List = []Mutant{
	{
		Name:  "quorum-of-1",
		Bug:   "the majority policy needs one node instead of a majority",
		File:  "multilock/policy.go",
		Old:   "func (majorityPolicy) FailedLocksLimit(n int) int { return n - (n/2 + 1) }",
		New:   "func (majorityPolicy) FailedLocksLimit(n int) int { return n - 1 }",
		Cells: []Cell{{"redlock-3", "baseline"}, {"redlock-5", "partition-minority"}},
	},
	{
		Name:  "unlock-without-owner-check",
		Bug:   "a release deletes the lock whoever holds it",
		File:  "node/release.lua",
		Old:   "local v = redis.pcall('get', KEYS[1])\n",
		New:   "redis.call('del', KEYS[1])\ndo return 1 end\nlocal v = redis.pcall('get', KEYS[1])\n",
		Cells: []Cell{{"redlock-3", "client-pause"}, {"single", "client-pause"}},
	},
	{
		Name:  "no-validity-check",
		Bug:   "a quorum granted after the TTL ran out counts (validity ≤ 0 not refused)",
		File:  "multilock/multilock.go",
		Old:   "\tif validity <= 0 {\n\t\treturn fail(ErrTooSlow)\n\t}\n",
		New:   "\tif validity < 0 {\n\t\treturn fail(ErrTooSlow)\n\t}\n",
		Cells: []Cell{{"single", "slow-acquire"}, {"failover", "slow-acquire"}},
	},
	{
		Name:  "no-drift-allowance",
		Bug:   "validity ignores clock drift (allowance 0)",
		File:  "drift/drift.go",
		Old:   "\treturn time.Duration(float64(ttl)*factor) + Granularity\n",
		New:   "\treturn 0\n",
		Cells: []Cell{{"redlock-3", "clock-rate-fast"}, {"single", "clock-rate-fast"}},
	},
	{
		Name:  "watchdog-silent",
		Bug:   "a lease whose renewal failed is never reported lost (Done never closes)",
		File:  "quorum/lease.go",
		Old:   "func (l *Lease) end(cause error) {\n\tl.mu.Lock()\n",
		New:   "func (l *Lease) end(cause error) {\n\tif errors.Is(cause, ErrLeaseLost) {\n\t\treturn\n\t}\n\tl.mu.Lock()\n",
		Cells: []Cell{{"redlock-5", "holder-isolated"}, {"redlock-3", "holder-isolated"}},
	},
	{
		Name:  "token-from-first-node",
		Bug:   "the fencing token is the first granting node's counter, never written back to the quorum",
		File:  "multilock/multilock.go",
		Old:   "\t\tif err := m.fence(ctx, maxFence, until, need); err != nil {\n\t\t\treturn fail(err)\n\t\t}\n\t\ttoken = maxFence\n",
		New:   "\t\tfor _, o := range m.outcomes {\n\t\t\tif o.Granted {\n\t\t\t\ttoken = o.Fence\n\t\t\t\tbreak\n\t\t\t}\n\t\t}\n",
		Cells: []Cell{{"redlock-5+fencing", "partition-minority"}, {"redlock-5+fencing", "random"}},
	},
	{
		Name:  "no-rollback",
		Bug:   "a failed attempt keeps the nodes it got until their TTL",
		File:  "multilock/multilock.go",
		Old:   "func (m *MultiLock) rollback() {\n",
		New:   "func (m *MultiLock) rollback() {\n\tif true {\n\t\treturn\n\t}\n",
		Cells: []Cell{{"redlock-5", "baseline"}, {"redlock-3", "baseline"}},
	},
	{
		Name:  "promoted-lock-without-expiry",
		Bug:   "a fast-path lock promoted in its last millisecond loses its expiry",
		File:  "node/lock_lib.lua",
		Old:   "  if pt <= 0 then return true end\n  redis.call('hset', KEYS[1], owner, 1, '\\0a:' .. att, 1)\n  redis.call('pexpire', KEYS[1], pt)\n",
		New:   "  redis.call('hset', KEYS[1], owner, 1, '\\0a:' .. att, 1)\n  if pt > 0 then redis.call('pexpire', KEYS[1], pt) end\n",
		Cells: []Cell{{"single", "expiry-race"}, {"redlock-3", "expiry-race"}},
	},
	{
		Name:  "fence-counter-expires",
		Bug:   "the fencing counter is kept with the lock's TTL instead of for good",
		File:  "node/acquire_lib.lua",
		Old:   "  if bump then return redis.call('incr', key) end\n",
		New:   "  if bump then\n    local v = redis.call('incr', key)\n    redis.call('pexpire', key, ARGV[2])\n    return v\n  end\n",
		Cells: []Cell{{"redlock-5+fencing", "partition-all"}},
	},
}
