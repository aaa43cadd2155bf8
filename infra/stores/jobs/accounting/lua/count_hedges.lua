-- Count what one call's hedging came to: on the job (hedges won, the losing copies' tokens) and in the
-- store-wide hedge totals of its slot (sent, won, tokens). KEYS: job, the hedge-totals copy of its slot.
-- ARGV: hedges sent, won (0|1), the losers' input tokens, output tokens. Returns -1 unknown job, 1 counted.
if not job_status(KEYS[1]) then return -1 end
redis.call('HINCRBY', KEYS[1], F.hedges_won, ARGV[2])
redis.call('HINCRBY', KEYS[1], F.hedge_input_tokens, ARGV[3])
redis.call('HINCRBY', KEYS[1], F.hedge_output_tokens, ARGV[4])
redis.call('HINCRBY', KEYS[2], 'sent', ARGV[1])
redis.call('HINCRBY', KEYS[2], 'won', ARGV[2])
redis.call('HINCRBY', KEYS[2], 'prompt', ARGV[3])
redis.call('HINCRBY', KEYS[2], 'completion', ARGV[4])
return 1
