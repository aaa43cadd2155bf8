"""The job store's Lua scripts: every transition that must be atomic in Redis.

Each runs as one script so that checks and writes cannot interleave with another worker's:
a terminal state is entered once, a part is counted once, a call is reserved once.
"""

FINISH = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return -1 end
if status == 'succeeded' or status == 'failed' or status == 'canceled' then return 0 end
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
for i = 4, #KEYS do redis.call('EXPIRE', KEYS[i], ARGV[2]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""

CREATE = """
local limit = tonumber(ARGV[2])
if limit > 0 and redis.call('SCARD', KEYS[4]) >= limit then return 0 end
for i = 6, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
return 1
"""

RECORD_PART = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('EXPIRE', KEYS[2], ARGV[8])
if ARGV[3] ~= '' then redis.call('HINCRBY', KEYS[1], ARGV[3], 1) end
redis.call('HINCRBY', KEYS[1], 'usage_calls', ARGV[4])
redis.call('HINCRBY', KEYS[1], 'usage_input_tokens', ARGV[5])
redis.call('HINCRBY', KEYS[1], 'usage_output_tokens', ARGV[6])
if ARGV[7] ~= '' then redis.call('HINCRBYFLOAT', KEYS[1], 'usage_cost_usd', ARGV[7]) end
return 1
"""

RESERVE_CALL = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'succeeded' or status == 'failed' or status == 'canceled' then return 0 end
if redis.call('HINCRBY', KEYS[1], 'llm_calls_reserved', 1) <= tonumber(ARGV[1]) then return 1 end
redis.call('HINCRBY', KEYS[1], 'llm_calls_reserved', -1)
return 0
"""

RETRY_OVERDUE = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'succeeded' or status == 'failed' or status == 'canceled' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 'skip'
end
local deadline = redis.call('ZSCORE', KEYS[2], ARGV[1])
if deadline and tonumber(deadline) > tonumber(ARGV[2]) then return 'skip' end
if tonumber(redis.call('HGET', KEYS[1], 'attempts') or '1') >= tonumber(ARGV[4]) then return 'give_up' end
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'deadline_at', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 'retry'
"""

UPDATE_LIVE = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return -1 end
if status == 'succeeded' or status == 'failed' or status == 'canceled' then return 0 end
for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
"""
