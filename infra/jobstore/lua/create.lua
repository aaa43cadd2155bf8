-- Admit and write a new job. KEYS: job, active set, session jobs, tenant live set.
-- ARGV: id, max live (0 = no cap), ttl, deadline, created_at, field/value pairs. Returns 0 over the cap, 1 created.
local limit = tonumber(ARGV[2])
if limit > 0 and redis.call('SCARD', KEYS[4]) >= limit then return 0 end
for i = 6, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
return 1
