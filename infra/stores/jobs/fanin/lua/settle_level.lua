-- Our own chord counter: after a part of a level settles, hand the level's next step to the one caller
-- that finds every part settled, once per attempt; again to that same caller (its task id: its message
-- redelivered after its worker died holding the step), never to another.
-- KEYS: job, the level's outputs hash, failures hash, fan-in hash. ARGV: level, the caller's task id ('': none).
-- Returns the step stored by `expect_parts` for that one caller; false otherwise (parts missing, claimed
-- already in this attempt by another caller, no step expected, or the job ended).
if job_ended(KEYS[1]) then return false end
local expected = redis.call('HGET', KEYS[4], ARGV[1] .. ':expected')
if not expected then return false end
local settled = redis.call('HLEN', KEYS[2])
local prefix = ARGV[1] .. ':'
for _, field in ipairs(redis.call('HKEYS', KEYS[3])) do
  if string.sub(field, 1, #prefix) == prefix then settled = settled + 1 end
end
if settled < tonumber(expected) then return false end
local attempt = redis.call('HGET', KEYS[1], F.attempts) or '1'
local claim, by = 'sent:' .. attempt .. ':' .. ARGV[1], ARGV[2] or ''
if redis.call('HSETNX', KEYS[4], claim, by) == 0 and (by == '' or redis.call('HGET', KEYS[4], claim) ~= by) then
  return false
end
return redis.call('HGET', KEYS[4], ARGV[1] .. ':then')
