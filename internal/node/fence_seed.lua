-- Seed a fencing counter that Lock.Acquire's fencing fast path found below
-- 2^32 (its INCR made it from nothing), only where this attempt's grant
-- still stands: a share already given back (an Unlock that overtook this
-- call) or expired must not be answered as held.
-- KEYS[1] lock, KEYS[2] fencing counter; ARGV[1] attempt id, ARGV[4] the
-- counter's retention in ms (acquire_lib.lua's fence reads it there).
-- Returns the counter, seeded from the node's clock (or counted up when
-- another call seeded it first), or 0 when the grant is gone.
if not stands(ARGV[1]) then
  -- Not seeded, but not left without an expiry either: the fast path sends
  -- its PEXPIRE only when due, so a counter INCR made from nothing may
  -- have none.
  if redis.call('pttl', KEYS[2]) == -1 then
    redis.call('pexpire', KEYS[2], ARGV[4])
  end
  return 0
end
return fence(true, KEYS[2])
