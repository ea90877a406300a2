-- Shared prelude (prepended to every script that reads KEYS[1] as a hash).
-- A lock held by a single acquisition may be a plain string "owner\0attempt"
-- with a PX expiry: Lock.Acquire's fast path sets it with SET NX. promote
-- turns such a string into the equivalent hash {owner: 1, "\0a:"..attempt: 1}
-- with the same expiry, so the hash model below applies unchanged. Keys that
-- are absent, hashes, or strings not in that form are left as they are.
-- A string whose PTTL is 0 is in its last millisecond: expiring now, so it is
-- deleted, not rebuilt (a hash rebuilt from it would have no expiry at all).
-- The fast path always sets an expiry; a string without one (-1) is treated
-- the same way, so no path leaves a lock that never expires. Returns true
-- when the key is gone.
local function promote()
  local v = redis.pcall('get', KEYS[1])
  if type(v) ~= 'string' then return false end
  local cut = string.find(v, '\0', 1, true)
  if not cut then return false end
  local pt = redis.call('pttl', KEYS[1])
  redis.call('del', KEYS[1])
  if pt <= 0 then return true end
  redis.call('hset', KEYS[1], string.sub(v, 1, cut - 1), 1, '\0a:' .. string.sub(v, cut + 1), 1)
  redis.call('pexpire', KEYS[1], pt)
  return false
end
