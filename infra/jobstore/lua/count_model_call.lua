-- Count one model call under the model that answered it: on the job (per model) and in the store-wide
-- totals per tenant, model and stage; a fallback that answered joins the job's `model_fallbacks` (the first
-- ARGV[8] only). KEYS: job, model usage totals. ARGV: stage, model, calls, input tokens, output tokens,
-- cost ('' = unknown), the fallback as JSON ('' = none), fallbacks kept. Returns -1 unknown job, 1 counted.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local sep = '\31'
local tenant = redis.call('HGET', KEYS[1], 'tenant') or ''
local on_job = 'model_usage' .. sep .. ARGV[2] .. sep
local in_totals = tenant .. sep .. ARGV[2] .. sep .. ARGV[1] .. sep
local names = {'calls', 'input_tokens', 'output_tokens'}
for i, name in ipairs(names) do
  redis.call('HINCRBY', KEYS[1], on_job .. name, ARGV[2 + i])
  redis.call('HINCRBY', KEYS[2], in_totals .. name, ARGV[2 + i])
end
if ARGV[6] ~= '' then
  redis.call('HINCRBYFLOAT', KEYS[1], on_job .. 'cost_usd', ARGV[6])
  redis.call('HINCRBYFLOAT', KEYS[2], in_totals .. 'cost_usd', ARGV[6])
end
if ARGV[7] ~= '' then
  local kept = cjson.decode(redis.call('HGET', KEYS[1], 'model_fallbacks') or '[]')
  if #kept < tonumber(ARGV[8]) then
    table.insert(kept, cjson.decode(ARGV[7]))
    redis.call('HSET', KEYS[1], 'model_fallbacks', cjson.encode(kept))
  end
end
return 1
