-- Phase one of taking a ticket: count the ticket counter up and put the
-- waiter in line as "taking a ticket" (score 0). While such an entry lives,
-- this node grants nobody: the waiter's ticket may end up lower than the
-- waiters already in line (the "choosing" flag of Lamport's bakery).
-- ARGV[1] waiter, ARGV[2] entry timeout in ms
-- Returns the counter's new value.
local now = now_ms()
purge(now)
local v = redis.call('incr', KEYS[4])
local s = redis.call('zscore', KEYS[2], ARGV[1])
if s then
  -- Already placed (this message came late) or gone for good: keep it so.
  return v
end
redis.call('zadd', KEYS[2], 0, ARGV[1])
redis.call('zadd', KEYS[3], now + tonumber(ARGV[2]), ARGV[1])
keep(tonumber(ARGV[2]))
return v
