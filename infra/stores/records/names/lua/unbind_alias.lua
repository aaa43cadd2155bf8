-- Remove an alias only if it still points at the given handle. KEYS: alias hash. ARGV: key, handle.
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
