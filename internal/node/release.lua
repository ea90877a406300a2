-- Give back one attempt's share of a reentrant lock.
-- KEYS[1] lock; ARGV[1] the fast path's string of this attempt (lock_lib.lua:
-- the attempt id alone in the compact form, else owner.."\0"..attempt id),
-- ARGV[2] "0" for the rollback of an attempt that never held the lock
-- (no message: waking waiters for it made them spin while another owner
-- held a quorum), else absent (the election's release passes "1")
-- Returns 1 when this attempt held a share (now given back), 0 otherwise.
-- Publishes on the unlock channel KEYS[1]..':unlock' (node.Keys), made
-- here rather than sent, when the lock became free.
-- A lock taken by Lock.Acquire's fast path is that same string.
--
-- This file runs first, before the prelude (lock_lib.lua) and the hash
-- form's part (release_hash.lua): a release of a fast-path lock, the lone
-- caller's common case, returns here without building the prelude's
-- functions (scripts.go).
local v = redis.pcall('get', KEYS[1])
if type(v) == 'string' then
  if v ~= ARGV[1] then return 0 end
  redis.call('del', KEYS[1])
  if ARGV[2] ~= '0' then redis.call('publish', KEYS[1] .. ':unlock', 'released') end
  return 1
elseif not v then
  return 0
end
