local m = redis.call('HMGET', KEYS[2], 'e', 'o')
local e, o = m[1], string.format('%d', (tonumber(m[2]) or 0) + 1)
local added = false
if e then
  added = type(redis.pcall('XADD', KEYS[1], 'MAXLEN', ARGV[3], o .. '-0', 'm', ARGV[2])) == 'string'
end
if not added then
  e = ARGV[5]
  redis.call('DEL', KEYS[1])
  redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], o .. '-0', 'm', ARGV[2])
end
redis.call('HSET', KEYS[2], 'e', e, 'o', o)
if ARGV[4] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
redis.call('SPUBLISH', ARGV[1], '\246' .. e .. o .. ':' .. ARGV[2])
return {e, o}
