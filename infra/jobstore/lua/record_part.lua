-- Store a map/reduce output once and count it. KEYS: job, parts hash, failures hash.
-- ARGV: index, text, counter field ('' = none), calls, input tokens, output tokens, cost ('' = unknown), ttl,
-- the part's failure field ('<level>:<index>').
-- Returns -1 unknown job, 0 already settled (stored, or recorded as failed), 1 stored.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[3], ARGV[9]) == 1 then return 0 end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('EXPIRE', KEYS[2], ARGV[8])
if ARGV[3] ~= '' then redis.call('HINCRBY', KEYS[1], ARGV[3], 1) end
redis.call('HINCRBY', KEYS[1], 'usage_calls', ARGV[4])
redis.call('HINCRBY', KEYS[1], 'usage_input_tokens', ARGV[5])
redis.call('HINCRBY', KEYS[1], 'usage_output_tokens', ARGV[6])
if ARGV[7] ~= '' then redis.call('HINCRBYFLOAT', KEYS[1], 'usage_cost_usd', ARGV[7]) end
return 1
