-- Reserve one LLM call of a live job's budget. KEYS: job. ARGV: limit. Returns 1 reserved, 0 refused.
if job_ended(KEYS[1]) then return 0 end
if redis.call('HINCRBY', KEYS[1], F.llm_calls_reserved, 1) <= tonumber(ARGV[1]) then return 1 end
redis.call('HINCRBY', KEYS[1], F.llm_calls_reserved, -1)
return 0
