-- Decide once what happens to a job past its deadline. KEYS: job, the active-jobs copy of its slot.
-- ARGV: id, now, new deadline, max attempts. Returns 'retry', 'give_up' or 'skip' (OverdueAction).
if job_ended(KEYS[1]) then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 'skip'
end
local deadline = redis.call('ZSCORE', KEYS[2], ARGV[1])
if deadline and tonumber(deadline) > tonumber(ARGV[2]) then return 'skip' end
if tonumber(redis.call('HGET', KEYS[1], F.attempts) or '1') >= tonumber(ARGV[4]) then return 'give_up' end
redis.call('HINCRBY', KEYS[1], F.attempts, 1)
redis.call('HSET', KEYS[1], F.deadline_at, ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 'retry'
