-- The next number of a per-session counter, only while the session exists (-1 otherwise).
-- KEYS: counters hash, session hash. ARGV: counter name.
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
