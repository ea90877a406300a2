-- Commit (rev, value) as the term's value, only where owner holds the
-- lock: phase two of a Proclaim, and a reader's write-back. A rev at least
-- as high already committed here is kept: a commit never lowers rev, so a
-- late or repeated message changes nothing.
-- KEYS[1] lock, KEYS[2] leader value hash
-- ARGV[1] owner, ARGV[2] term, ARGV[3] rev, ARGV[4] value, ARGV[5] channel
-- told of the new value
-- Returns 1 when rev (or a later one) is committed here, 0 when owner does
-- not hold the lock.
if not holds(ARGV[1]) then return 0 end
local pt = redis.call('pttl', KEYS[1])
-- 0: the lock's last millisecond; -1: no expiry (never set by a lock).
if pt <= 0 then return 0 end
own(ARGV[1], ARGV[2])
local rev = tonumber(ARGV[3])
local cur = redis.call('hmget', KEYS[2], 'rev', 'prep_rev')
if cur[1] and tonumber(cur[1]) >= rev then return 1 end
redis.call('hset', KEYS[2], 'rev', ARGV[3], 'value', ARGV[4])
-- A pending value up to this rev is settled (a later one stays pending).
if cur[2] and tonumber(cur[2]) <= rev then
  redis.call('hdel', KEYS[2], 'prep_rev', 'prep_value')
end
redis.call('pexpire', KEYS[2], pt)
redis.call('publish', ARGV[5], ARGV[2])
return 1
