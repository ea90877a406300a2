-- The hash form of release.lua, run after the prelude (lock_lib.lua) when
-- the lock is a hash: split the owner from the attempt.
-- wake wakes the head of the lock's line, as release.lua's string branch
-- does (see there).
local function wake()
  local q = KEYS[1] .. ':waiters'
  if ARGV[3] then redis.pcall('zrem', q, ARGV[3]) end
  for _ = 1, 8 do
    local h = redis.pcall('zpopmin', q)
    if h.err or #h == 0 then break end
    local ch, seq = string.match(h[1], '^(.*):([^:]*)$')
    if ch and redis.call('publish', ch, seq) > 0 then return end
  end
  redis.call('publish', KEYS[1] .. ':unlock', 'released')
end
local owner, att = split(ARGV[1])
att = '\0a:' .. att
-- The common case in one read: this attempt's share is the only one (the
-- hash is {owner: 1, att: 1}), so the lock becomes free. Same effect as the
-- general path below, in three calls instead of five.
local h = redis.call('hgetall', KEYS[1])
if #h == 4 and h[2] == '1' and h[4] == '1' and
    ((h[1] == att and h[3] == owner) or (h[3] == att and h[1] == owner)) then
  redis.call('del', KEYS[1])
  if ARGV[2] ~= '0' then wake() end
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
  if ARGV[2] ~= '0' then wake() end
end
return 1
