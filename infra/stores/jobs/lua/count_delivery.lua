-- Count one start of a job's task message. KEYS: job, its deliveries hash. ARGV: the delivery (task id, retry).
-- The count lives as long as the job (its TTL is copied; a job without one, live, keeps the count until it ends,
-- when `finish` gives every owned key the job's TTL). Returns 0 unknown job (nothing counted), else the count.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local count = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return count
