-- Helpers every job script shares (put after the generated names, before each script: infra/redis/lua.py).

-- The job's status; false when the job is gone (deleted, expired).
local function job_status(job)
  return redis.call('HGET', job, F.status)
end

-- True for a job that no longer takes work: gone, or in a terminal state.
local function job_ended(job)
  local status = job_status(job)
  return not status or ENDED[status] == true
end

-- What a script that changes a live job returns when the job is not live: -1 gone, 0 ended; nil when live.
local function not_live(job)
  local status = job_status(job)
  if not status then return -1 end
  if ENDED[status] then return 0 end
  return nil
end

-- Add a usage (counters in USAGE_COUNTS order, then the cost, '' = unknown) to `hash`, each counter under
-- the field `field_of(name)`.
local function add_usage(hash, field_of, usage)
  for i, name in ipairs(USAGE_COUNTS) do
    redis.call('HINCRBY', hash, field_of(name), usage[i])
  end
  local cost = usage[#USAGE_COUNTS + 1]
  if cost ~= '' then
    redis.call('HINCRBYFLOAT', hash, field_of(TOTALS.cost), cost)
  end
end

-- Count usage on the job and, under the job's tenant and model, in the usage totals (the copy on the job's slot).
local function count_usage(job, totals, usage)
  local owner = (redis.call('HGET', job, F.tenant) or '') .. TOTALS.separator
    .. (redis.call('HGET', job, F.model) or '') .. TOTALS.separator
  add_usage(job, function(name) return USAGE_FIELD[name] end, usage)
  add_usage(totals, function(name) return owner .. name end, usage)
end

-- Count one model call's usage on the job under the model that answered it, and in the per-model totals
-- under the job's tenant, that model and the stage.
local function count_model_usage(job, totals, model, stage, usage)
  local sep = TOTALS.separator
  local tenant = redis.call('HGET', job, F.tenant) or ''
  add_usage(job, function(name) return F.model_usage .. sep .. model .. sep .. name end, usage)
  add_usage(totals, function(name) return tenant .. sep .. model .. sep .. stage .. sep .. name end, usage)
end

-- ARGV[first] .. ARGV[first + #USAGE_COUNTS]: a usage as count_usage takes it.
local function usage_from(first)
  return {unpack(ARGV, first, first + #USAGE_COUNTS)}
end

