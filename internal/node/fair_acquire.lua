-- One fair acquisition attempt of one waiter on this node: place or refresh
-- the waiter's entry, then grant when the lock is free and the waiter is
-- first in line.
-- ARGV[1] owner, ARGV[2] ttl in ms, ARGV[3] attempt id, ARGV[4] the fencing
-- retention in ms ("0": no fencing), ARGV[5] waiter ("" with mode "try"), ARGV[6] ticket,
-- ARGV[7] mode: "try" (no entry: grant only when nobody is in line),
-- "enqueue" (phase two of the ticket: write it back and place the entry),
-- "place" (as enqueue, but the entry taking a ticket must still be there),
-- "refresh" (the entry must still be there; refresh its deadline),
-- ARGV[8] entry timeout in ms, ARGV[9] wake channel prefix, ARGV[10] unlock
-- channel, ARGV[11] the ticket counter's retention in ms
-- Returns {1, fence, entry} when granted, {0, wait in ms, entry} when not;
-- entry: 0 none (try), 1 the entry was there, 2 placed anew, 3 gone.
local now = now_ms()
local changed = purge(now)
local att = '\0a:' .. ARGV[3]
local waiter, mode, timeout = ARGV[5], ARGV[7], tonumber(ARGV[8])

local entry = 0
if mode ~= 'try' then
  local s = redis.call('zscore', KEYS[2], waiter)
  if s and tonumber(s) < 0 then
    -- The waiter left; this is a late message of it. Never put it back.
    entry = 3
  elseif mode == 'enqueue' or mode == 'place' then
    -- Write the ticket back set-if-greater: any ticket taken after this
    -- on a majority overlapping this one is higher.
    local t = tonumber(ARGV[6])
    if tonumber(redis.call('get', KEYS[4]) or '0') < t then
      redis.call('set', KEYS[4], t, 'px', ARGV[11])
    else
      redis.call('pexpire', KEYS[4], ARGV[11])
    end
    if s then
      entry = 1
      -- A waiter that was taking its ticket no longer holds the line back.
      if choosing(tonumber(s)) then changed = true end
      redis.call('zadd', KEYS[2], t, waiter)
    elseif mode == 'enqueue' then
      entry = 2
      redis.call('zadd', KEYS[2], t, waiter)
    else
      -- "place": its ticket was counted here, so its entry was here since;
      -- it is not any more (it expired): the waiter must know.
      entry = 3
    end
  elseif s then
    entry = 1
  else
    -- Its deadline passed (it did not refresh in time) or the node lost it.
    entry = 3
  end
  if entry == 1 or entry == 2 then
    redis.call('zadd', KEYS[3], now + timeout, waiter)
    keep(timeout)
  end
end

local mine = redis.call('hmget', KEYS[1], att, ARGV[1])
-- This attempt already holds it (a retried call whose reply was lost).
if mine[1] then
  rearm()
  return {1, fence(false, KEYS[5]), entry}
end
-- Held by the same owner: reentrant, whatever the line says (as Redisson).
if mine[2] then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  redis.call('hset', KEYS[1], att, 1)
  rearm()
  return {1, fence(false, KEYS[5]), entry}
end
-- Held by another owner (fair or plain): wait for its claim.
if redis.call('exists', KEYS[1]) == 1 then
  return {0, redis.call('pttl', KEYS[1]), entry}
end
-- Free. Grant only to the first in line (with "try": only when nobody is).
local h = head()
if entry == 3 or (#h > 0 and h[1] ~= waiter) then
  -- Whoever is first now may not know yet that it is (an entry before it
  -- expired, or a waiter taking its ticket placed it).
  if changed then wake(ARGV[9], ARGV[10], waiter) end
  local wait = 0
  if #h > 0 then
    wait = math.max(tonumber(redis.call('zscore', KEYS[3], h[1]) or now) - now, 1)
  end
  return {0, wait, entry}
end
redis.call('hset', KEYS[1], ARGV[1], 1, att, 1)
redis.call('pexpire', KEYS[1], ARGV[2])
return {1, fence(true, KEYS[5]), entry}
