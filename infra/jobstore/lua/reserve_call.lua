-- Reserve one LLM call of a live job's budget. KEYS: job. ARGV: limit. Returns 1 reserved, 0 refused.
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'succeeded' or status == 'failed' or status == 'canceled' then return 0 end
if redis.call('HINCRBY', KEYS[1], 'llm_calls_reserved', 1) <= tonumber(ARGV[1]) then return 1 end
redis.call('HINCRBY', KEYS[1], 'llm_calls_reserved', -1)
return 0
