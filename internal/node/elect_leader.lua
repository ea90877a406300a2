-- Read the leader of an election on this node.
-- KEYS[1] lock, KEYS[2] leader value hash
-- Returns {1, term, rev, value, pttl, owner} when the hash's owner holds
-- the lock: rev and value are the committed ones (rev 0 and '' before the
-- term's first commit; a pending value is never read); {0} otherwise (no
-- leader, or a hash left by a leader whose lock is gone: force-unlocked,
-- or expired a moment before the hash).
local h = redis.call('hmget', KEYS[2], 'owner', 'term', 'rev', 'value')
if not h[1] or not holds(h[1]) then return {0} end
local rev, value = 0, ''
if h[3] then rev, value = tonumber(h[3]), h[4] or '' end
return {1, tonumber(h[2]), rev, value, redis.call('pttl', KEYS[1]), h[1]}
