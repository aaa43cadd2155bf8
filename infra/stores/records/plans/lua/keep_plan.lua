-- Store one chunk plan of an output, only while its record exists (a plan written after the output
-- was deleted would outlive it). A hash already holding MAX plans is emptied first: plans are cheap
-- to make again, and one output's hash must not grow with every distinct question asked of it.
-- KEYS[1] output record, KEYS[2] the output's plans hash; ARGV: plan key, plan JSON, max plans.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
