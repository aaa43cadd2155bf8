-- Append events to a job's trace while the job exists, within its byte bound (infra/stores/jobs/traces/events.py):
-- the first event that does not fit leaves the marker in its place, and nothing is added after it. The
-- trace takes the job's own lifetime, so it never outlives the record it explains.
-- KEYS: job, trace hash. ARGV: max bytes, marker, events... Returns -1 unknown job, else the events added.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[2], 'cut') == 1 then return 0 end
local used = tonumber(redis.call('HGET', KEYS[2], 'bytes') or '0')
local n = tonumber(redis.call('HGET', KEYS[2], 'next') or '0')
local room = tonumber(ARGV[1]) - #ARGV[2]
local added = 0
for i = 3, #ARGV do
  if used + #ARGV[i] > room then
    redis.call('HSET', KEYS[2], tostring(n), ARGV[2], 'cut', '1')
    n = n + 1
    used = used + #ARGV[2]
    break
  end
  redis.call('HSET', KEYS[2], tostring(n), ARGV[i])
  n = n + 1
  used = used + #ARGV[i]
  added = added + 1
end
redis.call('HSET', KEYS[2], 'bytes', used, 'next', n)
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return added
