-- Operator's force-unlock: delete the lock whoever holds it and wake waiters.
-- KEYS[1] lock hash; ARGV[1] unlock channel
-- Returns 1 when a lock was removed, 0 when it was free.
if redis.call('del', KEYS[1]) == 0 then
  return 0
end
redis.call('publish', ARGV[1], 'forced')
return 1
