-- Give back one attempt's share of a read-write lock.
-- KEYS[1] lock hash; ARGV[1] attempt id, ARGV[2] unlock channel, ARGV[3]
-- "0" for the rollback of an attempt that never held the lock (no message)
-- Returns 1 when this attempt held a share (now given back), 0 otherwise.
-- Publishes on the unlock channel when the lock became free ("released") or
-- its last write share went and readers may enter ("read").
local att = '\0a:' .. ARGV[1]
if redis.call('hdel', KEYS[1], att) == 0 then
  -- Never granted here, expired, or already given back.
  return 0
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('hgetall', KEYS[1])
local writers, readers = 0, 0
for i = 1, #h, 2 do
  local f = h[i]
  if string.sub(f, 1, 3) == '\0a:' then
    local m, dl = string.match(h[i + 1], '^(%a):(%d+):')
    if tonumber(dl) <= now then
      redis.call('hdel', KEYS[1], f)
    elseif m == 'w' then
      writers = writers + 1
    else
      readers = readers + 1
    end
  end
end
if writers + readers == 0 then
  redis.call('del', KEYS[1])
  if ARGV[3] ~= '0' then redis.call('publish', ARGV[2], 'released') end
  return 1
end
if writers == 0 and redis.call('hget', KEYS[1], '\0mode') == 'write' then
  -- The writer's owner still reads: other readers may join now.
  redis.call('hset', KEYS[1], '\0mode', 'read')
  if ARGV[3] ~= '0' then redis.call('publish', ARGV[2], 'read') end
end
return 1
