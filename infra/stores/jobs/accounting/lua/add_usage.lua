-- Count usage that is not a stored part, on the job and in the usage totals.
-- KEYS: job, the usage-totals copy of its slot. ARGV: the usage (counters, cost).
-- Returns -1 unknown job (nothing counted), 1 counted.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
count_usage(KEYS[1], KEYS[2], usage_from(1))
return 1
