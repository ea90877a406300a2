-- Acquire one attempt's share of a reentrant lock (Redisson's hash model).
-- KEYS[1] lock hash {owner -> hold count, "\0a:"..attempt -> 1}
-- KEYS[2] fencing counter
-- ARGV[1] owner, ARGV[2] ttl in ms, ARGV[3] attempt id, ARGV[4] "1" to count fencing
-- Returns {1, fence} when granted, {0, pttl} when held by another owner.
local att = '\0a:' .. ARGV[3]
-- Free (or a fast-path string in its last millisecond, which promote
-- deletes): create with count 1. Otherwise a fast-path string is seen as
-- the hash it stands for.
if redis.call('exists', KEYS[1]) == 0 or promote() then
  redis.call('hset', KEYS[1], ARGV[1], 1, att, 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, fence(true, KEYS[2])}
end
-- This attempt already holds it (a retried call whose reply was lost):
-- answer again without counting twice.
if redis.call('hexists', KEYS[1], att) == 1 then
  rearm()
  return {1, fence(false, KEYS[2])}
end
-- Held by the same owner: reentrant, count + 1.
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  redis.call('hset', KEYS[1], att, 1)
  rearm()
  return {1, fence(false, KEYS[2])}
end
-- Held by another owner: tell the caller how long that claim lasts.
return {0, redis.call('pttl', KEYS[1])}
