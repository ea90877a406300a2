-- Write the leader's value next to the lock, only where owner holds it.
-- KEYS[1] lock, KEYS[2] leader value hash
-- ARGV[1] owner, ARGV[2] term, ARGV[3] rev (a Proclaim's number within the
-- term), ARGV[4] value, ARGV[5] channel told of the new value
-- Returns 1 when the value is in place, 0 when owner does not hold the lock.
if not holds(ARGV[1]) then return 0 end
local pt = redis.call('pttl', KEYS[1])
-- 0: the lock's last millisecond; -1: no expiry (never set by a lock).
if pt <= 0 then return 0 end
local cur = redis.call('hmget', KEYS[2], 'owner', 'rev')
if cur[1] == ARGV[1] and tonumber(cur[2]) > tonumber(ARGV[3]) then
  -- A later Proclaim of this term got here first (a late message): keep it.
  return 1
end
redis.call('hset', KEYS[2], 'owner', ARGV[1], 'term', ARGV[2], 'rev', ARGV[3], 'value', ARGV[4])
redis.call('pexpire', KEYS[2], pt)
redis.call('publish', ARGV[5], ARGV[2])
return 1
