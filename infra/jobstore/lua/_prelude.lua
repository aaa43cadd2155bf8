-- Helpers every job script shares (put after the generated names, before each script: infra/lua.py).

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

-- Count usage on the job and, under the job's tenant and model, in the store-wide totals hash.
-- `usage` is the counters in USAGE_COUNTS order, then the cost ('' = unknown).
local function count_usage(job, totals, usage)
  local sep = TOTALS.separator
  local owner = (redis.call('HGET', job, F.tenant) or '') .. sep .. (redis.call('HGET', job, F.model) or '') .. sep
  for i, name in ipairs(USAGE_COUNTS) do
    redis.call('HINCRBY', job, USAGE_FIELD[name], usage[i])
    redis.call('HINCRBY', totals, owner .. name, usage[i])
  end
  local cost = usage[#USAGE_COUNTS + 1]
  if cost ~= '' then
    redis.call('HINCRBYFLOAT', job, USAGE_FIELD[TOTALS.cost], cost)
    redis.call('HINCRBYFLOAT', totals, owner .. TOTALS.cost, cost)
  end
end

-- ARGV[first] .. ARGV[first + #USAGE_COUNTS]: a usage as count_usage takes it.
local function usage_from(first)
  return {unpack(ARGV, first, first + #USAGE_COUNTS)}
end

