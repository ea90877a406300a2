-- Write a value only if the fencing token is at least the last one accepted.
-- KEYS[1] the resource, KEYS[2] the last accepted token
-- ARGV[1] token, ARGV[2] value, ARGV[3] ttl in ms (0: no expiry)
-- Returns {1, last} when written, {0, last} when refused (last is the token
-- accepted before this call).
local last = tonumber(redis.call('get', KEYS[2]) or '0')
local token = tonumber(ARGV[1])
if token < last then
  -- A newer holder has written: the caller's lease has ended.
  return {0, last}
end
if tonumber(ARGV[3]) > 0 then
  redis.call('set', KEYS[1], ARGV[2], 'px', ARGV[3])
else
  redis.call('set', KEYS[1], ARGV[2])
end
if token > last then
  redis.call('set', KEYS[2], ARGV[1])
end
return {1, last}
