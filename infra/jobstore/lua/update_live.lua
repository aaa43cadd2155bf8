-- Set fields on a live job. KEYS: job. ARGV: field/value pairs. Returns -1 unknown, 0 ended, 1 set.
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return -1 end
if status == 'succeeded' or status == 'failed' or status == 'canceled' then return 0 end
for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
