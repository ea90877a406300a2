-- Shared prelude (prepended to every script that reads KEYS[1] as a hash).
-- A lock held by a single acquisition may be a plain string with a PX
-- expiry: Lock.Acquire's fast path sets it with SET NX. It has one of two
-- forms (split reads both):
--   "attempt" alone when the attempt id is owner.."."..n and n has no '.'
--     (the compact form: the owner is the attempt id up to its last '.';
--     quorum's own owners and attempts have this shape);
--   "owner\0attempt" otherwise (any owner without a NUL; every lock
--     before the compact form).
-- split returns the owner and the attempt id of such a string, or nil for a
-- string in neither form (not ours: left alone).
local function split(v)
  local cut = string.find(v, '\0', 1, true)
  if cut then return string.sub(v, 1, cut - 1), string.sub(v, cut + 1) end
  local dot = string.find(v, '%.[^.]*$')
  if dot and dot > 1 and dot < #v then return string.sub(v, 1, dot - 1), v end
  return nil
end
-- stands reports whether attempt att still holds its grant on KEYS[1]: the
-- fast path's string naming att, or att's field of the hash.
local function stands(att)
  local v = redis.pcall('get', KEYS[1])
  if type(v) == 'string' then
    local _, a = split(v)
    return a == att
  end
  return redis.call('hexists', KEYS[1], '\0a:' .. att) == 1
end
-- promote turns a fast-path string into the equivalent hash
-- {owner: 1, "\0a:"..attempt: 1} with the same expiry, so the hash model
-- below applies unchanged. Keys that are absent, hashes, or strings in
-- neither form are left as they are.
-- A string whose PTTL is 0 is in its last millisecond: expiring now, so it is
-- deleted, not rebuilt (a hash rebuilt from it would have no expiry at all).
-- The fast path always sets an expiry; a string without one (-1) is treated
-- the same way, so no path leaves a lock that never expires. Returns true
-- when the key is gone.
local function promote()
  local v = redis.pcall('get', KEYS[1])
  if type(v) ~= 'string' then return false end
  local owner, att = split(v)
  if not owner then return false end
  local pt = redis.call('pttl', KEYS[1])
  redis.call('del', KEYS[1])
  if pt <= 0 then return true end
  redis.call('hset', KEYS[1], owner, 1, '\0a:' .. att, 1)
  redis.call('pexpire', KEYS[1], pt)
  return false
end
