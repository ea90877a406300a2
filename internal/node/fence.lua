-- Write a fencing token back, set-if-greater, only where this attempt's grant
-- still stands (a holder whose claim expired must not raise the counter).
-- KEYS[1] lock hash, KEYS[2] fencing counter; ARGV[1] attempt id, ARGV[2] token,
-- ARGV[3] the counter's retention in ms (re-armed on every use).
-- Returns 1 when the counter is now >= token, 0 when the grant is gone.
-- The grant is a single holder's string or an attempt field of the hash
-- (lock_lib.lua's stands); the string stays a string (a fenced lock is as
-- small as an unfenced one).
if not stands(ARGV[1]) then return 0 end
if tonumber(redis.call('get', KEYS[2]) or '0') < tonumber(ARGV[2]) then
  redis.call('set', KEYS[2], ARGV[2], 'px', ARGV[3])
else
  redis.call('pexpire', KEYS[2], ARGV[3])
end
return 1
