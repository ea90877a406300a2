-- Operator's force-unlock: delete the lock whoever holds it, record who did
-- it, and wake waiters.
-- KEYS[1] lock hash, KEYS[2] force-unlock record (hash)
-- ARGV[1] unlock channel, ARGV[2] who, ARGV[3] when (unix ms, the operator's
-- clock), ARGV[4] how long the record lives in ms
-- Returns 1 when a lock was removed, 0 when it was free.
-- The fencing counter is kept: tokens must go on increasing after a force.
local removed = redis.call('del', KEYS[1])
-- Record on every node, also where the lock was absent, so Inspect on any
-- node shows the operator's action.
redis.call('hset', KEYS[2], 'by', ARGV[2], 'at', ARGV[3], 'removed', removed)
redis.call('pexpire', KEYS[2], ARGV[4])
-- Wake waiters even where the lock was absent: a waiter blocked by leftovers
-- on other nodes tries again at once.
redis.call('publish', ARGV[1], 'forced')
return removed
