-- Write to a key a job owns (its task ids, its fan-in) while the job exists, and give the key a lifetime:
-- a task scheduling after its session was deleted must not leave keys behind.
-- KEYS: job, owned key. ARGV: ttl, command ('SADD': members | 'HSET': field/value pairs), its arguments.
-- Returns -1 unknown job (nothing written), 1 written.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local step = ARGV[2] == 'HSET' and 2 or 1
for i = 3, #ARGV, step do redis.call(ARGV[2], KEYS[2], unpack(ARGV, i, i + step - 1)) end
redis.call('EXPIRE', KEYS[2], ARGV[1])
return 1
