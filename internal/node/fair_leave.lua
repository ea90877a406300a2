-- A waiter gives up (cancelled, or it lost its place and takes a new
-- ticket): take it out of line; wake the next waiter if it was first.
-- ARGV[1] waiter, ARGV[2] entry timeout in ms, ARGV[3] wake channel prefix,
-- ARGV[4] unlock channel
-- Returns 1.
local now = now_ms()
local changed = purge(now)
if leave(ARGV[1], now, tonumber(ARGV[2])) then changed = true end
if changed then wake(ARGV[3], ARGV[4], '') end
return 1
