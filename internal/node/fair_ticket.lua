-- Phase one of taking a ticket: count the ticket counter up to v and put
-- the waiter in line as "taking a ticket" at v - 0.5 (the "choosing" flag
-- of Lamport's bakery). Its ticket may end up lower than tickets already in
-- line, so while the entry lives this node grants no waiter whose ticket is
-- v or more. One whose ticket is below v sorts before it and is not held
-- back: if this waiter's ticket could end up below that one, its counter
-- value from a node of its majority would be below too, and that node
-- holds the other waiter back (docs/fairness.md).
-- ARGV[1] waiter, ARGV[2] entry timeout in ms, ARGV[3] the ticket
-- counter's retention in ms
-- Returns the counter's new value.
local now = now_ms()
purge(now)
local v = redis.call('incr', KEYS[4])
-- Re-armed on every use, so the counter of a name no longer used goes away
-- (ticket order only needs it to outlive the line: keep below).
redis.call('pexpire', KEYS[4], ARGV[3])
local s = redis.call('zscore', KEYS[2], ARGV[1])
if s then
  -- Already placed (this message came late) or gone for good: keep it so.
  return v
end
redis.call('zadd', KEYS[2], v - 0.5, ARGV[1])
redis.call('zadd', KEYS[3], now + tonumber(ARGV[2]), ARGV[1])
keep(tonumber(ARGV[2]))
return v
