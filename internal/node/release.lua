-- Give back one attempt's share of a reentrant lock.
-- KEYS[1] lock; ARGV[1] the fast path's string of this attempt (lock_lib.lua:
-- the attempt id alone in the compact form, else owner.."\0"..attempt id),
-- ARGV[2] "0" for the rollback of an attempt that never held the lock
-- (no message: waking waiters for it made them spin while another owner
-- held a quorum), else absent (the election's release passes "1"),
-- ARGV[3] (a lock won by a queued waiter) its member in the line, taken
-- out before the head is woken
-- Returns 1 when this attempt held a share (now given back), 0 otherwise.
-- When the lock became free it wakes one waiter (below).
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
  if ARGV[2] ~= '0' then
    -- Wake one waiter: the head of the lock's line (acquire.lua's queue),
    -- member "<channel>:<waiter>": its client's wait channel
    -- (node.WaitChannel), the waiter's number as the message. One client
    -- tries, not every waiting one. A head nobody hears (its client is
    -- gone) is dropped and the next one tried. With nobody in line (the
    -- lone caller's case: one ZPOPMIN on no key) publish on the lock's
    -- channel KEYS[1]..':unlock' (node.Keys), made here rather than sent,
    -- for waiters that do not queue. A waiter never woken retries at the
    -- holder's remaining claim or its retry interval, so a lost message
    -- costs time only; so does a user who may not run ZPOPMIN (an ACL
    -- from before the line: pcall), told on the lock's channel.
    -- Inline, not a function: this branch runs before the prelude's
    -- functions are built (scripts.go); release_hash.lua's wake does the
    -- same.
    local q = KEYS[1] .. ':waiters'
    if ARGV[3] then redis.pcall('zrem', q, ARGV[3]) end
    local told = false
    for _ = 1, 8 do
      local h = redis.pcall('zpopmin', q)
      if h.err or #h == 0 then break end
      local ch, seq = string.match(h[1], '^(.*):([^:]*)$')
      if ch and redis.call('publish', ch, seq) > 0 then
        told = true
        break
      end
    end
    if not told then redis.call('publish', KEYS[1] .. ':unlock', 'released') end
  end
  return 1
elseif not v then
  return 0
end
