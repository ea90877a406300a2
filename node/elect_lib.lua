-- Election prelude (after lock_lib.lua): the leader's value lives next to
-- the lock, in KEYS[2], a hash {owner, term, rev, value} with the lock's
-- expiry. holds tells whether owner holds the lock KEYS[1] (either form:
-- the fast path's string or the hash).
local function holds(owner)
  if not owner then return false end
  local v = redis.pcall('get', KEYS[1])
  if type(v) == 'string' then return split(v) == owner end
  -- GET answers nil (false) for a missing key and an error for a hash.
  if not v then return false end
  return redis.call('hexists', KEYS[1], owner) == 1
end
