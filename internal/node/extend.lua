-- Re-arm the TTL only where this attempt still holds a share; never acquires.
-- KEYS[1] lock hash; ARGV[1] attempt id, ARGV[2] ttl in ms
-- Returns 1 when extended, 0 when not held by this attempt.
-- A fast-path string (lock_lib.lua) is re-armed as it is when it is this
-- attempt's: a watchdog's renewal keeps the small string instead of
-- promoting it to a hash.
local v = redis.pcall('get', KEYS[1])
if type(v) == 'string' then
  local _, att = split(v)
  if att ~= ARGV[1] then return 0 end
elseif redis.call('hexists', KEYS[1], '\0a:' .. ARGV[1]) == 0 then
  return 0
end
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('pexpire', KEYS[1], ARGV[2])
end
return 1
