-- Acquire one attempt's read or write share of a read-write lock (Redisson's
-- mode-field model, with shares counted per attempt as acquire.lua does).
-- KEYS[1] lock hash {"\0mode" -> "read"|"write",
--                    "\0a:"..attempt -> mode..":"..deadline_ms..":"..owner}
-- KEYS[2] fencing counter
-- ARGV[1] owner, ARGV[2] ttl in ms, ARGV[3] attempt id, ARGV[4] the fencing
-- retention in ms ("0": no fencing), ARGV[5] "r" for a read share, "w" for a write share
-- Returns {1, fence} when granted, {0, pttl} when refused.
-- Each share carries its own deadline (a reader that crashed does not live on
-- while other readers renew the key); the key's PX covers the latest one.
local att = '\0a:' .. ARGV[3]
local ttl = tonumber(ARGV[2])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function grant(mode)
  redis.call('hset', KEYS[1], '\0mode', mode, att, ARGV[5] .. ':' .. (now + ttl) .. ':' .. ARGV[1])
  rearm()
end

local h = redis.call('hgetall', KEYS[1])
if #h > 0 and redis.call('hexists', KEYS[1], '\0mode') == 0 then
  -- Held as a plain lock (a Mutex of the same name): it excludes everyone.
  return {0, redis.call('pttl', KEYS[1])}
end
-- Drop shares past their deadline; count what is left.
local writers, readers, ownerWrites, mine = 0, 0, false, false
for i = 1, #h, 2 do
  local f = h[i]
  if string.sub(f, 1, 3) == '\0a:' then
    local m, dl, o = string.match(h[i + 1], '^(%a):(%d+):(.*)$')
    if tonumber(dl) <= now then
      redis.call('hdel', KEYS[1], f)
    else
      if f == att then mine = true end
      if m == 'w' then
        writers = writers + 1
        if o == ARGV[1] then ownerWrites = true end
      else
        readers = readers + 1
      end
    end
  end
end
-- Free (or only expired shares): take it in the asked mode.
if writers + readers == 0 then
  redis.call('del', KEYS[1])
  if ARGV[5] == 'w' then grant('write') else grant('read') end
  return {1, fence(true, KEYS[2])}
end
local mode = 'read'
if writers > 0 then mode = 'write' end
-- This attempt already holds a share (a retried call whose reply was lost):
-- answer again and move its deadline, without counting twice.
if mine then
  grant(mode)
  return {1, fence(false, KEYS[2])}
end
if ARGV[5] == 'r' then
  -- Readers share; a writer's owner may also read (a write lock can take a
  -- read lock it covers).
  if writers == 0 or ownerWrites then
    grant(mode)
    return {1, fence(false, KEYS[2])}
  end
elseif ownerWrites then
  -- Reentrant write by the owner that writes (any readers are that owner).
  -- A reader asking to write is refused: no upgrade.
  grant('write')
  return {1, fence(false, KEYS[2])}
end
return {0, redis.call('pttl', KEYS[1])}
