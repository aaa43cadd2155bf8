-- Count one model call under the model that answered it: on the job (per model) and in the store-wide
-- totals per tenant, model and stage; a fallback that answered joins the job's fallbacks (the first
-- ARGV[#USAGE_COUNTS + 5] only). KEYS: job, model usage totals. ARGV: stage, model, the usage (counters in
-- USAGE_COUNTS order, then the cost, '' = unknown), the fallback as JSON ('' = none), fallbacks kept.
-- Returns -1 unknown job (nothing created), 1 counted.
if not job_status(KEYS[1]) then return -1 end
local sep = TOTALS.separator
local tenant = redis.call('HGET', KEYS[1], F.tenant) or ''
local on_job = F.model_usage .. sep .. ARGV[2] .. sep
local in_totals = tenant .. sep .. ARGV[2] .. sep .. ARGV[1] .. sep
local usage = usage_from(3)
for i, name in ipairs(USAGE_COUNTS) do
  redis.call('HINCRBY', KEYS[1], on_job .. name, usage[i])
  redis.call('HINCRBY', KEYS[2], in_totals .. name, usage[i])
end
local cost = usage[#USAGE_COUNTS + 1]
if cost ~= '' then
  redis.call('HINCRBYFLOAT', KEYS[1], on_job .. TOTALS.cost, cost)
  redis.call('HINCRBYFLOAT', KEYS[2], in_totals .. TOTALS.cost, cost)
end
local fallback = ARGV[#USAGE_COUNTS + 4]
if fallback ~= '' then
  local kept = cjson.decode(redis.call('HGET', KEYS[1], F.model_fallbacks) or '[]')
  if #kept < tonumber(ARGV[#USAGE_COUNTS + 5]) then
    table.insert(kept, cjson.decode(fallback))
    redis.call('HSET', KEYS[1], F.model_fallbacks, cjson.encode(kept))
  end
end
return 1
