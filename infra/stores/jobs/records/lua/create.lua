-- Write a new job with its lifetime, and index it as live (the tenant admitted it already: admit.lua).
-- KEYS: job, the active-jobs copy of its slot. ARGV: id, ttl, deadline ('' = born finished: never live, not
-- indexed), field/value pairs. Returns 1.
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1]) end
return 1
