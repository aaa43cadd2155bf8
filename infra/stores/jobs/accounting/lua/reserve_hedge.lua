-- Reserve one hedge of a live job's hedge budget (a hedge is sent at once once granted).
-- KEYS: job. ARGV: limit. Returns 1 reserved (counted in hedges_sent), 0 refused.
if job_ended(KEYS[1]) then return 0 end
if redis.call('HINCRBY', KEYS[1], F.hedges_sent, 1) <= tonumber(ARGV[1]) then return 1 end
redis.call('HINCRBY', KEYS[1], F.hedges_sent, -1)
return 0
