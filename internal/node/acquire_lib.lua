-- Shared steps of the acquire scripts (acquire.lua, rw_acquire.lua,
-- fair_acquire.lua), prepended to each. KEYS[1] is the lock; ARGV[2] the ttl
-- in ms; ARGV[4] "0" without fencing, else the fencing counters' retention
-- in ms.
-- fence: the fencing counter at key (0 without fencing), incremented for a
-- new grant (bump) and read for a repeated or reentrant one. Every use
-- re-arms the counter's expiry (the retention), so counters of names no
-- longer locked go away. A counter that does not exist (never made, or
-- expired) starts at the node's clock in microseconds: larger than any
-- token of an expired counter, which was made earlier and counted up by
-- far less than one per microsecond, unless the clock went back. A counter
-- below 2^32 is seeded the same way: Lock.Acquire's fencing fast path
-- (lock.go) INCRs it without a script, which makes a missing one 1.
local function fence(bump, key)
  if ARGV[4] == '0' then return 0 end
  local v = tonumber(redis.call('get', key) or '0')
  if v == 0 and not bump then return 0 end
  if v >= 4294967296 then
    if bump then v = redis.call('incr', key) end
    redis.call('pexpire', key, ARGV[4])
    return v
  end
  local t = redis.call('time')
  v = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
  redis.call('set', key, v, 'px', ARGV[4])
  return tonumber(v)
end
-- rearm: the lock lives at least ttl from now; never shorten a claim another
-- share relies on.
local function rearm()
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
end
