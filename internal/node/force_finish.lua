-- Operator's force-unlock, step two on one node (after step one reached
-- every node): remove the tombstone force_release.lua left, and wake waiters.
-- KEYS[1] lock hash; ARGV[1] unlock channel
-- Returns 1 when a tombstone was removed, 0 when none was left (it expired).
local removed = 0
-- Only the tombstone: a hash with any other field is someone's lock.
if redis.call('hlen', KEYS[1]) == 1 and redis.call('hexists', KEYS[1], '\0forced') == 1 then
  removed = redis.call('del', KEYS[1])
end
redis.call('publish', ARGV[1], 'forced')
return removed
