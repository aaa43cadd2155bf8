-- A call of the job starts (+1) or stops (-1) waiting for its turn under its model's provider limits.
-- KEYS: job. ARGV: change in waiting calls, seconds waited. Returns -1 unknown job (nothing created), 1 noted.
if not job_status(KEYS[1]) then return -1 end
redis.call('HINCRBY', KEYS[1], F.calls_waiting, ARGV[1])
redis.call('HINCRBYFLOAT', KEYS[1], F.rate_limit_wait_seconds, ARGV[2])
return 1
