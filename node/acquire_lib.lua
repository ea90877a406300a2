-- Shared steps of the acquire scripts (acquire.lua, rw_acquire.lua,
-- fair_acquire.lua), prepended to each. KEYS[1] is the lock; ARGV[2] the ttl
-- in ms; ARGV[4] "1" to count fencing.
-- fence: the fencing counter at key (0 without fencing), incremented for a
-- new grant (bump) and read for a repeated or reentrant one.
local function fence(bump, key)
  if ARGV[4] ~= '1' then return 0 end
  if bump then return redis.call('incr', key) end
  return tonumber(redis.call('get', key) or '0')
end
-- rearm: the lock lives at least ttl from now; never shorten a claim another
-- share relies on.
local function rearm()
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
end
