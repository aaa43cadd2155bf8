-- Keep the first stored response, then drop our lock. KEYS: response, lock. ARGV: response JSON, ttl, lock value.
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2], 'NX')
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
return 1
