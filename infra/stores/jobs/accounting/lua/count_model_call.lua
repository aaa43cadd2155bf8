-- Count one model call under the model that answered it: on the job (per model) and in the store-wide
-- totals per tenant, model and stage; a fallback that answered joins the job's fallbacks (the first
-- ARGV[#USAGE_COUNTS + 5] only). KEYS: job, the model-usage-totals copy of its slot. ARGV: stage, model, the
-- usage (counters in USAGE_COUNTS order, then the cost, '' = unknown), the fallback as JSON ('' = none),
-- fallbacks kept.
-- Returns -1 unknown job (nothing created), 1 counted.
if not job_status(KEYS[1]) then return -1 end
count_model_usage(KEYS[1], KEYS[2], ARGV[2], ARGV[1], usage_from(3))
local fallback = ARGV[#USAGE_COUNTS + 4]
if fallback ~= '' then
  local kept = cjson.decode(redis.call('HGET', KEYS[1], F.model_fallbacks) or '[]')
  if #kept < tonumber(ARGV[#USAGE_COUNTS + 5]) then
    table.insert(kept, cjson.decode(fallback))
    redis.call('HSET', KEYS[1], F.model_fallbacks, cjson.encode(kept))
  end
end
return 1
