-- Enter a terminal state once. KEYS: job, the active-jobs copy of its slot, owned keys (TTL).
-- ARGV: job id, ttl, the channel announcing ends (infra.stores.jobs.ends), field/value pairs.
-- Returns -1 unknown job, 0 already ended, 1 finished (and the job id published on the channel).
-- The tenant's live set is on another slot: the caller leaves it after this script (`RedisJobRecords.finish`).
local refused = not_live(KEYS[1])
if refused then return refused end
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('ZREM', KEYS[2], ARGV[1])
for i = 3, #KEYS do redis.call('EXPIRE', KEYS[i], ARGV[2]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1
