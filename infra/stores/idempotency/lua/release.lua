-- Drop the lock only if this lease still holds it. KEYS: lock. ARGV: lock value. Returns 1 dropped, 0 not ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
