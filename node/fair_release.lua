-- Give back one attempt's share of a fair lock; for a held lease also take
-- its waiter out of line. Then wake exactly the next waiter.
-- ARGV[1] owner, ARGV[2] attempt id, ARGV[3] waiter ("" keeps the entry: a
-- failed attempt's rollback, the waiter still waits), ARGV[4] entry timeout
-- in ms, ARGV[5] wake channel prefix, ARGV[6] unlock channel
-- Returns 1 when this attempt held a share (now given back), 0 otherwise.
local now = now_ms()
local changed = purge(now)
if ARGV[3] ~= '' and leave(ARGV[3], now, tonumber(ARGV[4])) then
  changed = true
end
local released = 0
if redis.call('hdel', KEYS[1], '\0a:' .. ARGV[2]) == 1 then
  released = 1
  if redis.call('hincrby', KEYS[1], ARGV[1], -1) <= 0 then
    redis.call('hdel', KEYS[1], ARGV[1])
  end
end
-- wake does nothing while the lock is still held (another share).
if released == 1 or changed then wake(ARGV[5], ARGV[6]) end
return released
