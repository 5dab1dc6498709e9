local e = redis.call('HGET', KEYS[2], 'e')
if not e then
  e = ARGV[5]
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[2], 'e', e)
end
local o = string.format('%d', redis.call('HINCRBY', KEYS[2], 'o', 1))
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], o .. '-0', 'm', ARGV[2])
if ARGV[4] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
redis.call('SPUBLISH', ARGV[1], '\246' .. e .. o .. ':' .. ARGV[2])
return {e, o}
