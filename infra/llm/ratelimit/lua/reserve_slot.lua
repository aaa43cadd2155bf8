-- Reserve a slot for one model call under the model's shared rpm/tpm limits (GCRA, one state per model).
-- KEYS: the model's limiter hash. ARGV: ms per request (0 = no rpm limit), ms per token (0 = no tpm limit),
-- the call's tokens, burst tolerance (ms).
-- Returns the milliseconds the caller must wait before sending; the slot is reserved either way, so callers
-- queue in the order they asked (no polling, no starvation). Redis' own clock: one clock for every worker.
local now_pair = redis.call('TIME')
local now = tonumber(now_pair[1]) * 1000 + math.floor(tonumber(now_pair[2]) / 1000)
local per_request, per_token = tonumber(ARGV[1]), tonumber(ARGV[2])
local tokens, burst = tonumber(ARGV[3]), tonumber(ARGV[4])
local r_tat = tonumber(redis.call('HGET', KEYS[1], 'r_tat') or '0')
local t_tat = tonumber(redis.call('HGET', KEYS[1], 't_tat') or '0')
local wait = 0
if per_request > 0 then wait = math.max(wait, r_tat - burst - now) end
if per_token > 0 then wait = math.max(wait, t_tat - burst - now) end
local send = now + wait
local horizon = send
if per_request > 0 then
  r_tat = math.max(r_tat, send) + per_request
  redis.call('HSET', KEYS[1], 'r_tat', string.format('%.3f', r_tat))
  horizon = math.max(horizon, r_tat)
end
if per_token > 0 then
  t_tat = math.max(t_tat, send) + tokens * per_token
  redis.call('HSET', KEYS[1], 't_tat', string.format('%.3f', t_tat))
  horizon = math.max(horizon, t_tat)
end
redis.call('PEXPIRE', KEYS[1], math.ceil(horizon - now) + 60000)
return math.ceil(wait)
