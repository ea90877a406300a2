-- Withdraw a pending value whose phase one did not reach a quorum: the
-- Proclaim failed, and its value must never be committed from here.
-- KEYS[2] leader value hash
-- ARGV[1] owner, ARGV[2] term, ARGV[3] rev
-- Returns 1 when that pending value was here (and is gone), else 0.
local cur = redis.call('hmget', KEYS[2], 'owner', 'term', 'prep_rev')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] or cur[3] ~= ARGV[3] then return 0 end
redis.call('hdel', KEYS[2], 'prep_rev', 'prep_value')
return 1
