-- Add to a job's counters while the job exists: HINCRBY on a missing hash would create it (no TTL, only
-- counters) after its session was deleted under a running task. KEYS: job. ARGV: field/increment pairs.
-- Returns -1 unknown job (nothing written), 1 added.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
for i = 1, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
