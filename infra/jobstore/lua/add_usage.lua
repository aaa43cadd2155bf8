-- Count usage that is not a stored part, on the job and in the usage totals. KEYS: job, usage totals.
-- ARGV: calls, input tokens, output tokens, cost ('' = unknown). Returns -1 unknown job (nothing counted), 1 counted.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local owner = (redis.call('HGET', KEYS[1], 'tenant') or '') .. '\31' .. (redis.call('HGET', KEYS[1], 'model') or '') .. '\31'
local names = {'calls', 'input_tokens', 'output_tokens'}
for i, name in ipairs(names) do
  redis.call('HINCRBY', KEYS[1], 'usage_' .. name, ARGV[i])
  redis.call('HINCRBY', KEYS[2], owner .. name, ARGV[i])
end
if ARGV[4] ~= '' then
  redis.call('HINCRBYFLOAT', KEYS[1], 'usage_cost_usd', ARGV[4])
  redis.call('HINCRBYFLOAT', KEYS[2], owner .. 'cost_usd', ARGV[4])
end
return 1
