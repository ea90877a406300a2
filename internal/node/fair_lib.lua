-- Shared helpers of the fair-lock scripts; node/fair.go puts this file in
-- front of each of them.
-- KEYS[1] lock hash (shared with the plain lock of the same name)
-- KEYS[2] queue: zset waiter -> ticket. While the waiter is taking its
--         ticket: v - 0.5, v being the counter value it drew here (a
--         "choosing" entry); -1 for a waiter that left (a tombstone)
-- KEYS[3] deadlines: zset waiter -> deadline in ms on this node's clock
-- KEYS[4] ticket counter
-- KEYS[5] fencing counter

local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Drop the entries (and tombstones) whose deadline has passed: a waiter that
-- stopped refreshing its entry leaves the line. True when any was dropped.
local function purge(now)
  local dead = redis.call('zrangebyscore', KEYS[3], '-inf', now, 'LIMIT', 0, 1000)
  if #dead == 0 then return false end
  redis.call('zrem', KEYS[2], unpack(dead))
  redis.call('zrem', KEYS[3], unpack(dead))
  return true
end

-- Keep both queue keys alive at least ms, so they outlive every deadline
-- in them and a name nobody uses any more leaves nothing behind. They hold
-- the same waiters, so they exist together; extending to twice ms means
-- most calls only look. Both are checked: a key created by a ZADD has no
-- expiry until this runs, and the other one may already have its own.
-- The ticket counter (its retention re-armed where a ticket is counted or
-- written back) must outlive the line too: a waiter that waits in line
-- longer than the retention still holds back every later ticket.
local function keep(ms)
  if redis.call('pttl', KEYS[2]) < ms or redis.call('pttl', KEYS[3]) < ms then
    redis.call('pexpire', KEYS[2], 2 * ms)
    redis.call('pexpire', KEYS[3], 2 * ms)
    local t = redis.call('pttl', KEYS[4])
    if t ~= -2 and t < 2 * ms then
      redis.call('pexpire', KEYS[4], 2 * ms)
    end
  end
end

-- Whether a queue score is a waiter still taking its ticket.
local function choosing(score)
  return score ~= math.floor(score)
end

-- The first live entry: {waiter, score} or an empty table.
local function head()
  return redis.call('zrangebyscore', KEYS[2], 0, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
end

-- Tell whoever is first in line that the lock is free here: on that waiter's
-- own channel (the part of its id before a '|'), so exactly one waiter
-- wakes. skip is a waiter that needs no telling (it is the caller).
local function wake(prefix, unlock, skip)
  if redis.call('exists', KEYS[1]) == 1 then return end
  local h = head()
  if #h == 0 then
    -- Nobody queues: wake plain-Mutex waiters of the same name, if any.
    redis.call('publish', unlock, 'released')
  elseif not choosing(tonumber(h[2])) and h[1] ~= skip then
    redis.call('publish', prefix .. string.match(h[1], '^[^|]*'), h[2])
  end
  -- A waiter still taking its ticket is first: nobody can be granted until
  -- it places its ticket, and that call looks at the line again.
end

-- Take waiter out of the line. A tombstone stays until the entry timeout has
-- passed, so a late message of the same waiter cannot put it back. True
-- when the waiter was first in line.
local function leave(waiter, now, timeout)
  local s = redis.call('zscore', KEYS[2], waiter)
  if s and tonumber(s) < 0 then return false end
  local first = false
  if s then
    local h = head()
    first = h[1] == waiter
  end
  redis.call('zadd', KEYS[2], -1, waiter)
  redis.call('zadd', KEYS[3], now + timeout, waiter)
  keep(timeout)
  return first
end
