-- Admit a job under its tenant's cap, before any of the job's own keys is written (they live on another
-- slot: `RedisJobRecords.create` says what a crash between the steps leaves). KEYS: the tenant's live jobs.
-- ARGV: job id, max live (0 = no cap), admitted at. Returns 0 over the cap, 1 admitted.
local limit = tonumber(ARGV[2])
if limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
