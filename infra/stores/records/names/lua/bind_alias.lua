-- Compare-and-set one alias (a variable name or a file path) of a session.
-- KEYS: alias hash, session hash. ARGV: key, new handle, expected handle ("" = the key must be free).
-- Returns {1, previous} when bound, {0, current} when the alias held something else, {-1, ""} when
-- the session is gone (nothing is written, so a deleted session never gets its hash back).
if redis.call('EXISTS', KEYS[2]) == 0 then return {-1, ''} end
local current = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if current ~= ARGV[3] then return {0, current} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {1, current}
