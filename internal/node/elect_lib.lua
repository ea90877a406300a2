-- Election prelude (after lock_lib.lua): the leader's value lives next to
-- the lock, in KEYS[2], a hash with the lock's expiry:
--   owner, term   the term it belongs to;
--   rev, value    the committed value: what readers see (absent until the
--                 term's first value is committed);
--   prep_rev, prep_value   a Proclaim's pending value (phase one): never
--                 read by a reader, only overwritten or withdrawn.
-- holds tells whether owner holds the lock KEYS[1] (either form: the fast
-- path's string or the hash).
local function holds(owner)
  if not owner then return false end
  local v = redis.pcall('get', KEYS[1])
  if type(v) == 'string' then return split(v) == owner end
  -- GET answers nil (false) for a missing key and an error for a hash.
  if not v then return false end
  return redis.call('hexists', KEYS[1], owner) == 1
end
-- own makes KEYS[2] the hash of owner's term: one left by another owner or
-- term (its lock expired or was forced a moment before the hash) is
-- dropped first, so a new term never shows an old term's value.
local function own(owner, term)
  local cur = redis.call('hmget', KEYS[2], 'owner', 'term')
  if cur[1] ~= owner or cur[2] ~= term then
    redis.call('del', KEYS[2])
    redis.call('hset', KEYS[2], 'owner', owner, 'term', term)
  end
end
