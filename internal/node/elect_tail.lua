-- Election epilogue, run after the release or extend script's body (that
-- body is wrapped as the function share, which returns its answer r).
-- KEYS[2] leader value hash; ARGV[1] is the share's attempt (extend) or its
-- fast-path string (release), both of which split names the owner of.
-- Extend: the value keeps the lock's expiry. Release: the value is removed
-- when it is the releasing owner's, and followers are told (ARGV[3]),
-- unless this is a rollback (ARGV[2] '0').
local r = share()
if MODE == 'extend' then
  if r == 1 and redis.call('exists', KEYS[2]) == 1 then
    local pt = redis.call('pttl', KEYS[1])
    if pt > 0 then redis.call('pexpire', KEYS[2], pt) end
  end
  return r
end
local owner = split(ARGV[1])
if owner and redis.call('hget', KEYS[2], 'owner') == owner then
  redis.call('del', KEYS[2])
  if ARGV[2] ~= '0' then redis.call('publish', ARGV[3], 'resigned') end
end
return r
