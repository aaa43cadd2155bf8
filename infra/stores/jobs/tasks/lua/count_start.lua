-- A task message of the job starts (+1) or ends (-1) its step: what stays counted are starts whose worker died.
-- KEYS: job, its deliveries hash. ARGV: the delivery (task id, retry), +1 or -1.
-- The count lives as long as the job (its TTL is copied; `finish` gives every owned key the ended job's TTL).
-- Returns 0 unknown job (nothing counted), else the starts of the delivery not ended.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local count = redis.call('HINCRBY', KEYS[2], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return count
