-- Write a fencing token back, set-if-greater, only where this attempt's grant
-- still stands (a holder whose claim expired must not raise the counter).
-- KEYS[1] lock hash, KEYS[2] fencing counter; ARGV[1] attempt id, ARGV[2] token
-- Returns 1 when the counter is now >= token, 0 when the grant is gone.
if redis.call('hexists', KEYS[1], '\0a:' .. ARGV[1]) == 0 then
  return 0
end
if tonumber(redis.call('get', KEYS[2]) or '0') < tonumber(ARGV[2]) then
  redis.call('set', KEYS[2], ARGV[2])
end
return 1
