-- Give back one attempt's share of a fair lock; for a held lease also take
-- its waiter out of line. Then wake exactly the next waiter.
-- ARGV[1] owner, ARGV[2] attempt id, ARGV[3] waiter ("" for TryLock),
-- ARGV[4] "1": the lease ends, the waiter leaves the line; "0": a failed
-- attempt's rollback, the waiter keeps its place and is not woken by its own
-- rollback (it tries again when the holder's release or its timer says so;
-- waking itself would spin while another holds a majority), ARGV[5] entry
-- timeout in ms, ARGV[6] wake channel prefix, ARGV[7] unlock channel
-- Returns 1 when this attempt held a share (now given back), 0 otherwise.
local now = now_ms()
local changed = purge(now)
local skip = ''
if ARGV[4] ~= '1' then
  skip = ARGV[3]
elseif ARGV[3] ~= '' and leave(ARGV[3], now, tonumber(ARGV[5])) then
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
if released == 1 or changed then wake(ARGV[6], ARGV[7], skip) end
return released
