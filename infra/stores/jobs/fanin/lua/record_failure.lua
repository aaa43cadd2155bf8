-- Record once that a part (a chunk, or a reduce group) of a live job could not be read.
-- KEYS: job, the part's outputs hash, failures hash, the failed-chunks and usage-totals copies of its slot.
-- ARGV: index in the outputs hash, failure field ('<level>:<index>'), the FailedRange JSON, chunks it loses,
-- stage ('map' | 'reduce'), ttl, then the failed attempts' usage (counters, cost).
-- Returns -1 unknown job, 0 ended or already settled (an output, or this failure, is stored), 1 recorded.
local refused = not_live(KEYS[1])
if refused then return refused end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 0 end
if redis.call('HSETNX', KEYS[3], ARGV[2], '1') == 0 then return 0 end
redis.call('EXPIRE', KEYS[3], ARGV[6])
local listed = redis.call('HGET', KEYS[1], F.failed_ranges)
if not listed or listed == '[]' then
  listed = '[' .. ARGV[3] .. ']'
else
  listed = string.sub(listed, 1, -2) .. ',' .. ARGV[3] .. ']'
end
redis.call('HSET', KEYS[1], F.failed_ranges, listed)
redis.call('HINCRBY', KEYS[1], F.chunks_failed, ARGV[4])
redis.call('HINCRBY', KEYS[4], ARGV[5], ARGV[4])
count_usage(KEYS[1], KEYS[5], usage_from(7))
return 1
