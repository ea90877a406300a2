package mutants

// List is the mutants `quorumlock-lab chaos --mutants` runs: the bugs a
// distributed lock is known to get wrong, each with the cells meant to catch
// it. A group of related mutants keeps them in a list_<topic>.go of its
// own, appended here, so adding one group does not touch the others.
var List = append([]Mutant{
	{
		Name:  "quorum-of-1",
		Bug:   "the majority policy needs one node instead of a majority",
		File:  "multilock/policy.go",
		Old:   "func (majorityPolicy) FailedLocksLimit(n int) int { return n - (n/2 + 1) }",
		New:   "func (majorityPolicy) FailedLocksLimit(n int) int { return n - 1 }",
		Cells: []CellID{{"redlock-3", "baseline", ""}, {"redlock-5", "partition-minority", ""}},
		CI:    true,
	},
	{
		Name:  "unlock-without-owner-check",
		Bug:   "a release deletes the lock whoever holds it",
		File:  "internal/node/release.lua",
		Old:   "local v = redis.pcall('get', KEYS[1])\n",
		New:   "redis.call('del', KEYS[1])\ndo return 1 end\nlocal v = redis.pcall('get', KEYS[1])\n",
		Cells: []CellID{{"redlock-3", "client-pause", ""}, {"single", "client-pause", ""}},
		CI:    true,
	},
	{
		Name:  "no-validity-check",
		Bug:   "a quorum granted after the TTL ran out counts (validity ≤ 0 not refused)",
		File:  "multilock/multilock.go",
		Old:   "\tif validity <= 0 {\n\t\treturn fail(ErrTooSlow)\n\t}\n",
		New:   "\tif validity < 0 {\n\t\treturn fail(ErrTooSlow)\n\t}\n",
		Cells: []CellID{{"single", "slow-acquire", ""}, {"failover", "slow-acquire", ""}},
	},
	{
		Name:  "no-drift-allowance",
		Bug:   "validity ignores clock drift (allowance 0)",
		File:  "drift/drift.go",
		Old:   "\treturn time.Duration(float64(ttl)*factor) + Granularity\n",
		New:   "\treturn 0\n",
		Cells: []CellID{{"redlock-3", "clock-rate-fast", ""}, {"single", "clock-rate-fast", ""}},
	},
	{
		Name:  "watchdog-silent",
		Bug:   "a lease whose renewal failed is never reported lost (Done never closes)",
		File:  "quorum/lease.go",
		Old:   "func (l *Lease) end(cause error) {\n\tl.mu.Lock()\n",
		New:   "func (l *Lease) end(cause error) {\n\tif errors.Is(cause, ErrLeaseLost) {\n\t\treturn\n\t}\n\tl.mu.Lock()\n",
		Cells: []CellID{{"redlock-5", "holder-isolated", ""}, {"redlock-3", "holder-isolated", ""}},
	},
	{
		Name:  "token-from-first-node",
		Bug:   "the fencing token is the first granting node's counter, never written back to the quorum",
		File:  "multilock/multilock.go",
		Old:   "\t\tif err := m.fence(ctx, maxFence, until, need); err != nil {\n\t\t\treturn fail(err)\n\t\t}\n\t\ttoken = maxFence\n",
		New:   "\t\tfor _, o := range m.outcomes {\n\t\t\tif o.Granted {\n\t\t\t\ttoken = o.Fence\n\t\t\t\tbreak\n\t\t\t}\n\t\t}\n",
		Cells: []CellID{{"redlock-5+fencing", "partition-minority", ""}, {"redlock-5+fencing", "random", ""}},
		CI:    true,
	},
	{
		Name: "no-rollback",
		Bug:  "a failed attempt keeps the nodes it got until their TTL",
		File: "multilock/multilock.go",
		Old:  "func (m *MultiLock) rollback() {\n",
		New:  "func (m *MultiLock) rollback() {\n\tif true {\n\t\treturn\n\t}\n",
		// In the open a release wakes the line's head alone, so attempts
		// seldom split the votes and a kept grant seldom blocks anyone;
		// with one of five nodes paused, two contenders that each get two
		// of the four left both fail, and kept grants then block all.
		Cells: []CellID{{"redlock-5", "baseline", ""}, {"redlock-5", "node-pause", ""}},
	},
	{
		Name:  "promoted-lock-without-expiry",
		Bug:   "a fast-path lock promoted in its last millisecond loses its expiry",
		File:  "internal/node/lock_lib.lua",
		Old:   "  if pt <= 0 then return true end\n  redis.call('hset', KEYS[1], owner, 1, '\\0a:' .. att, 1)\n  redis.call('pexpire', KEYS[1], pt)\n",
		New:   "  redis.call('hset', KEYS[1], owner, 1, '\\0a:' .. att, 1)\n  if pt > 0 then redis.call('pexpire', KEYS[1], pt) end\n",
		Cells: []CellID{{"single", "expiry-race", ""}, {"redlock-3", "expiry-race", ""}},
	},
	{
		Name:  "fence-counter-expires",
		Bug:   "the fencing counter is kept with the lock's TTL instead of the retention, and a recreated one starts at 1 instead of the node's clock",
		File:  "internal/node/acquire_lib.lua",
		Old:   "    redis.call('pexpire', key, ARGV[4])\n    return v\n  end\n  local t = redis.call('time')\n  v = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]\n  redis.call('set', key, v, 'px', ARGV[4])\n",
		New:   "    redis.call('pexpire', key, ARGV[2])\n    return v\n  end\n  v = 1\n  redis.call('set', key, v, 'px', ARGV[2])\n",
		Cells: []CellID{{"redlock-5+fencing", "partition-all", ""}},
	},
	// One mutant per lock kind: each is killed by its kind's
	// workload, judged on the property the kind promises.
	{
		Name:  "rw-writer-beside-readers",
		Bug:   "a read-write lock admits a writer while readers hold it",
		File:  "internal/node/rw_acquire.lua",
		Old:   "elseif ownerWrites then\n",
		New:   "elseif ownerWrites or writers == 0 then\n",
		Cells: []CellID{{"redlock-5+fencing", "baseline", "rw"}, {"redlock-5+fencing", "partition-minority", "rw"}},
		CI:    true,
	},
	{
		Name:  "rw-writer-refused-when-free",
		Bug:   "a read-write lock refuses a writer the free lock (only readers take it), so writers wait out every Lock",
		File:  "internal/node/rw_acquire.lua",
		Old:   "if writers + readers == 0 then\n",
		New:   "if writers + readers == 0 and ARGV[5] == 'r' then\n",
		Cells: []CellID{{"redlock-5+fencing", "baseline", "rw"}},
		CI:    true,
	},
	{
		Name:  "fair-last-first",
		Bug:   "a fair lock serves the last waiter in line first",
		File:  "internal/node/fair_lib.lua",
		Old:   "  return redis.call('zrangebyscore', KEYS[2], 0, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)\n",
		New:   "  return redis.call('zrevrangebyscore', KEYS[2], '+inf', 0, 'WITHSCORES', 'LIMIT', 0, 1)\n",
		Cells: []CellID{{"redlock-3", "baseline", "fair"}, {"redlock-3", "node-pause", "fair"}},
		CI:    true,
	},
	{
		Name:  "renewal-believes-longer",
		Bug:   "a renewal believes the lease valid two TTLs longer than the nodes keep it",
		File:  "multilock/multilock.go",
		Old:   "\tm.until, m.ttl = end.Add(v), ttl\n",
		New:   "\tm.until, m.ttl = end.Add(v+2*ttl), ttl\n",
		Cells: []CellID{{"redlock-3", "holder-isolated", "renewed"}},
		CI:    true,
	},
	{
		Name: "all-partial-set",
		Bug:  "MutexAll grants when a majority of its names is obtained, not all of them",
		File: "quorum/mutex.go",
		Old:  "\treturn multilock.New(subs, c.mlOptsAll...)\n",
		// The outer policy alone changes: the members still fence
		// themselves (c.mlOpts would also fence the outer lock, which
		// fails every grant and shows as liveness, not as the bug).
		New:   "\treturn multilock.New(subs, append(c.mlOptsAll[:len(c.mlOptsAll):len(c.mlOptsAll)], multilock.WithPolicy(Majority))...)\n",
		Cells: []CellID{{"redlock-5+fencing", "baseline", "all"}, {"redlock-5+fencing", "partition-minority", "all"}},
		CI:    true,
	},
	{
		Name:  "reentrant-partial-release-frees",
		Bug:   "giving back one of an owner's nested holds deletes the lock",
		File:  "internal/node/release_hash.lua",
		Old:   "if redis.call('hincrby', KEYS[1], owner, -1) > 0 then\n",
		New:   "if redis.call('del', KEYS[1]) < 0 then\n",
		Cells: []CellID{{"redlock-3", "baseline", "reentrant"}, {"redlock-3", "partition-minority", "reentrant"}},
		CI:    true,
	},
	{
		Name:  "due-short-lease-late",
		Bug:   "the client's lease timer is not moved earlier for a lease due before the one it is set for: a short lease beside a long one ends late",
		File:  "quorum/leasetimer.go",
		Old:   "\tif q.armed.IsZero() || at.Before(q.armed) {\n",
		New:   "\tif q.armed.IsZero() {\n",
		Cells: []CellID{{"redlock-3", "baseline", "ttls"}},
		CI:    true,
	},
	{
		Name:  "batched-replies-swapped",
		Bug:   "a pipeline of several callers' commands hands the replies out in reverse order",
		File:  "internal/node/batch.go",
		Old:   "\t\tc.val, c.err = cmds[i].Val(), cmds[i].Err()\n",
		New:   "\t\tc.val, c.err = cmds[len(cmds)-1-i].Val(), cmds[len(cmds)-1-i].Err()\n",
		Cells: []CellID{{"redlock-3", "baseline", "batched"}, {"redlock-3", "latency", "batched"}},
		CI:    true,
	},
}, append(append(append(append(append(elecproofMutants, kindsciMutants...), guardMutants...), restartMutants...), electreadsMutants...), herdMutants...)...)
