-- Store a map/reduce output once and count it, on the job and in the usage totals.
-- KEYS: job, parts hash, failures hash, the usage-totals copy of its slot.
-- ARGV: index, text, counter field ('' = none), ttl, the part's failure field ('<level>:<index>'),
-- then its usage (counters, cost).
-- Returns -1 unknown job, 0 already settled (stored, or recorded as failed), 1 stored.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[3], ARGV[5]) == 1 then return 0 end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('EXPIRE', KEYS[2], ARGV[4])
if ARGV[3] ~= '' then redis.call('HINCRBY', KEYS[1], F[ARGV[3]], 1) end
count_usage(KEYS[1], KEYS[4], usage_from(6))
return 1
