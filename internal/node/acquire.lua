-- Acquire one attempt's share of a reentrant lock (Redisson's hash model).
-- KEYS[1] lock: the string of a single holder (lock_lib.lua) or the hash
-- {owner -> hold count, "\0a:"..attempt -> 1}
-- KEYS[2] fencing counter
-- ARGV[1] owner, ARGV[2] ttl in ms, ARGV[3] attempt id, ARGV[4] the fencing retention in ms ("0": no fencing),
-- ARGV[5] the string form of this attempt's share (node.FastValue),
-- ARGV[6], ARGV[7] (a waiting Lock only) the waiter's member and score in
-- the lock's line of waiters (node.Lock.Queue)
-- Returns {1, fence} when granted, {0, pttl} when held by another owner,
-- {2, pttl} when held by another owner and the caller queued (queue).
local att = '\0a:' .. ARGV[3]
-- queue puts a refused waiter in the lock's line (KEYS[1]..':waiters', a
-- sorted set by the time the waiter started, the same score on every node
-- so every node has the same head) and returns 2, or returns 0 when it
-- did not. A release wakes only the head (release.lua), instead of every
-- waiting client. The line lives as long as the holder's claim pt plus
-- the waiter's ttl: a waiter tries again within the holder's claim (its
-- fallback) and re-arms it then, so a line no waiter tends expires.
-- holder: the holding attempt (nil: read from the hash form's fields). A
-- waiter refused by a holder of its own client (the attempt ids of a
-- client start with its id and ':') queues only behind waiters of other
-- clients (a line exists): while a client's goroutines hand the lock
-- among themselves, the client wakes its waiters itself, in its own
-- order, on the lock's channel, and the nodes keep no line.
local function queue(pt, holder)
  if not ARGV[7] then return 0 end
  local q = KEYS[1] .. ':waiters'
  local mine = string.match(ARGV[3], '^[^:]*:')
  if mine and not holder then
    local h = redis.pcall('hgetall', KEYS[1])
    for i = 1, (h.err and 0 or #h), 2 do
      if string.sub(h[i], 1, 3) == '\0a:' then
        holder = string.sub(h[i], 4)
        break
      end
    end
  end
  if mine and holder and string.sub(holder, 1, #mine) == mine and
      redis.call('exists', q) == 0 then
    return 0
  end
  -- A user who may not run ZADD (an ACL from before the line) waits as
  -- before: woken by the lock's channel.
  if type(redis.pcall('zadd', q, ARGV[7], ARGV[6])) == 'table' then return 0 end
  redis.call('pexpire', q, math.max(pt, 0) + tonumber(ARGV[2]))
  return 2
end
-- A fast-path string (lock_lib.lua) is answered as it is where the hash
-- would not change the answer, so it stays the small string: this
-- attempt's own (a retried call) is granted again; another owner's is
-- refused, unless it is in its last millisecond (PTTL 0) or has no expiry:
-- that one is left to promote below, which deletes it.
local v = redis.pcall('get', KEYS[1])
if type(v) == 'string' then
  local owner, a = split(v)
  if owner == ARGV[1] and a == ARGV[3] then
    rearm()
    return {1, fence(false, KEYS[2])}
  end
  if owner and owner ~= ARGV[1] then
    local pt = redis.call('pttl', KEYS[1])
    if pt > 0 then
      return {queue(pt, a), pt}
    end
  end
end
-- Free (or a fast-path string in its last millisecond, which promote
-- deletes): taken in the string form of a single holder, ARGV[5], as the
-- fast path takes it (a fenced lock is as small as an unfenced one; the
-- hash appears only with a second share). Otherwise a fast-path string is
-- seen as the hash it stands for. GET answered nil only for a missing key
-- (a hash makes it an error), so no EXISTS is needed.
if not v or promote() then
  redis.call('set', KEYS[1], ARGV[5], 'px', ARGV[2])
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
local pt = redis.call('pttl', KEYS[1])
return {queue(pt), pt}
