-- Set fields on a live job. KEYS: job. ARGV: field/value pairs. Returns -1 unknown, 0 ended, 1 set.
local refused = not_live(KEYS[1])
if refused then return refused end
for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
