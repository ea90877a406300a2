-- Re-arm the TTL only where this attempt still holds a share; never acquires.
-- KEYS[1] lock hash; ARGV[1] attempt id, ARGV[2] ttl in ms
-- Returns 1 when extended, 0 when not held by this attempt.
if redis.call('hexists', KEYS[1], '\0a:' .. ARGV[1]) == 0 then
  return 0
end
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('pexpire', KEYS[1], ARGV[2])
end
return 1
