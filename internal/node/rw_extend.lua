-- Move one attempt's share of a read-write lock to now + ttl and re-arm the
-- key; never acquires, and never revives a share past its deadline.
-- KEYS[1] lock hash; ARGV[1] attempt id, ARGV[2] ttl in ms
-- Returns 1 when extended, 0 when not held by this attempt.
local att = '\0a:' .. ARGV[1]
local v = redis.call('hget', KEYS[1], att)
if not v then
  return 0
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local m, dl, o = string.match(v, '^(%a):(%d+):(.*)$')
if tonumber(dl) <= now then
  return 0
end
local ttl = tonumber(ARGV[2])
redis.call('hset', KEYS[1], att, m .. ':' .. (now + ttl) .. ':' .. o)
if redis.call('pttl', KEYS[1]) < ttl then
  redis.call('pexpire', KEYS[1], ttl)
end
return 1
