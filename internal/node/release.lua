-- Give back one attempt's share of a reentrant lock.
-- KEYS[1] lock; ARGV[1] the fast path's string of this attempt (lock_lib.lua:
-- the attempt id alone in the compact form, else owner.."\0"..attempt id),
-- ARGV[2] unlock channel,
-- ARGV[3] "0" for the rollback of an attempt that never held the lock
-- (no message: waking waiters for it made them spin while another owner
-- held a quorum), else "1"
-- Returns 1 when this attempt held a share (now given back), 0 otherwise.
-- Publishes on the unlock channel when the lock became free.
-- A lock taken by Lock.Acquire's fast path is that same string.
local v = redis.pcall('get', KEYS[1])
if type(v) == 'string' then
  if v ~= ARGV[1] then return 0 end
  redis.call('del', KEYS[1])
  if ARGV[3] ~= '0' then redis.call('publish', ARGV[2], 'released') end
  return 1
elseif not v then
  return 0
end
-- The hash form: split the owner from the attempt (lock_lib.lua).
local owner, att = split(ARGV[1])
att = '\0a:' .. att
-- The common case in one read: this attempt's share is the only one (the
-- hash is {owner: 1, att: 1}), so the lock becomes free. Same effect as the
-- general path below, in three calls instead of five.
local h = redis.call('hgetall', KEYS[1])
if #h == 4 and h[2] == '1' and h[4] == '1' and
    ((h[1] == att and h[3] == owner) or (h[3] == att and h[1] == owner)) then
  redis.call('del', KEYS[1])
  if ARGV[3] ~= '0' then redis.call('publish', ARGV[2], 'released') end
  return 1
end
if redis.call('hdel', KEYS[1], att) == 0 then
  -- Never granted here, expired, or already given back.
  return 0
end
if redis.call('hincrby', KEYS[1], owner, -1) > 0 then
  -- The owner still holds it through another acquisition.
  return 1
end
redis.call('hdel', KEYS[1], owner)
-- An empty hash is deleted by Redis itself; other fields mean other holders.
if redis.call('exists', KEYS[1]) == 0 then
  if ARGV[3] ~= '0' then redis.call('publish', ARGV[2], 'released') end
end
return 1
