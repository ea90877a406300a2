-- Read the leader of an election on this node.
-- KEYS[1] lock, KEYS[2] leader value hash
-- Returns {1, term, rev, value, pttl} when the value's owner holds the
-- lock, {0} otherwise (no leader, or a value left by a leader whose lock
-- is gone: force-unlocked, or expired a moment before the value).
local h = redis.call('hmget', KEYS[2], 'owner', 'term', 'rev', 'value')
if not h[1] or not holds(h[1]) then return {0} end
return {1, tonumber(h[2]), tonumber(h[3]), h[4], redis.call('pttl', KEYS[1])}
