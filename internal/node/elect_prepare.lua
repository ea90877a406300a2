-- Phase one of a Proclaim: keep the value as pending, only where owner
-- holds the lock. Readers never see it; it becomes visible only by the
-- commit (elect_commit.lua) of the same rev, sent once a quorum prepared.
-- KEYS[1] lock, KEYS[2] leader value hash
-- ARGV[1] owner, ARGV[2] term, ARGV[3] rev, ARGV[4] value
-- Returns 1 when the value is pending here, 0 when owner does not hold the
-- lock.
if not holds(ARGV[1]) then return 0 end
local pt = redis.call('pttl', KEYS[1])
-- 0: the lock's last millisecond; -1: no expiry (never set by a lock).
if pt <= 0 then return 0 end
own(ARGV[1], ARGV[2])
redis.call('hset', KEYS[2], 'prep_rev', ARGV[3], 'prep_value', ARGV[4])
redis.call('pexpire', KEYS[2], pt)
return 1
