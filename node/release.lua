-- Give back one attempt's share of a reentrant lock.
-- KEYS[1] lock hash; ARGV[1] owner, ARGV[2] attempt id, ARGV[3] unlock channel
-- Returns 1 when this attempt held a share (now given back), 0 otherwise.
-- Publishes on the unlock channel when the lock became free.
-- A lock taken by Lock.Acquire's fast path is the string "owner\0attempt".
local v = redis.pcall('get', KEYS[1])
if type(v) == 'string' then
  if v ~= ARGV[1] .. '\0' .. ARGV[2] then return 0 end
  redis.call('del', KEYS[1])
  redis.call('publish', ARGV[3], 'released')
  return 1
elseif not v then
  return 0
end
local att = '\0a:' .. ARGV[2]
-- The common case in one read: this attempt's share is the only one (the
-- hash is {owner: 1, att: 1}), so the lock becomes free. Same effect as the
-- general path below, in three calls instead of five.
local h = redis.call('hgetall', KEYS[1])
if #h == 4 and h[2] == '1' and h[4] == '1' and
    ((h[1] == att and h[3] == ARGV[1]) or (h[3] == att and h[1] == ARGV[1])) then
  redis.call('del', KEYS[1])
  redis.call('publish', ARGV[3], 'released')
  return 1
end
if redis.call('hdel', KEYS[1], att) == 0 then
  -- Never granted here, expired, or already given back.
  return 0
end
if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
  -- The owner still holds it through another acquisition.
  return 1
end
redis.call('hdel', KEYS[1], ARGV[1])
-- An empty hash is deleted by Redis itself; other fields mean other holders.
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('publish', ARGV[3], 'released')
end
return 1
