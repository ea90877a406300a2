-- Operator's force-unlock, step one on one node: delete the lock whoever
-- holds it and record who did it.
-- KEYS[1] lock hash, KEYS[2] force-unlock record (hash)
-- ARGV[1] unlock channel, ARGV[2] who, ARGV[3] when (unix ms, the operator's
-- clock), ARGV[4] how long the record lives in ms, ARGV[5] hold in ms
-- Returns 1 when a lock was removed, 0 when it was free.
-- The fencing counter is kept: tokens must go on increasing.
local removed = redis.call('del', KEYS[1])
-- Record where something was removed, so Inspect shows the operator's
-- action; a force of a name nobody held (a typo) leaves nothing behind.
if removed == 1 then
  redis.call('hset', KEYS[2], 'by', ARGV[2], 'at', ARGV[3], 'removed', removed)
  redis.call('pexpire', KEYS[2], ARGV[4])
end
if tonumber(ARGV[5]) > 0 then
  -- Hold: leave a tombstone in the lock's place that refuses every
  -- acquisition (every acquire script refuses a hash that is not its own)
  -- until force_finish.lua removes it, once the force reached every node.
  -- A force reaches the nodes one by one: without the hold, a waiter could
  -- win nodes the force has passed and lose the others' to it, left holding
  -- less than a quorum while it thinks it holds the lock. The tombstone's
  -- TTL ends the hold if the operator's client goes away.
  redis.call('hset', KEYS[1], '\0forced', ARGV[2])
  redis.call('pexpire', KEYS[1], ARGV[5])
else
  -- Wake waiters, also where the lock was absent: a waiter blocked by
  -- leftovers on other nodes tries again at once.
  redis.call('publish', ARGV[1], 'forced')
end
return removed
