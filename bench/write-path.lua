-- wrk script for bench/write-path.sh: POST bodies per scenario (MODE env):
--   incr  one hot key; store  1,000 distinct keys in turn; submit  a form, one client address per request;
--   refuse  a new key every request (the user is at its key quota)
local mode = os.getenv("MODE")
local key = os.getenv("API_KEY")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Forwarded-Proto"] = "https"
if key and mode ~= "submit" then wrk.headers["Authorization"] = "Bearer " .. key end
local n = 0
local tid = 0
local count = 0
function setup(thread)
  thread:set("tid", count)
  count = count + 1
end
function request()
  n = n + 1
  if mode == "incr" then
    return wrk.format(nil, nil, nil, '{"key":"hot"}')
  elseif mode == "refuse" then
    return wrk.format(nil, nil, nil, '{"key":"new' .. tid .. '-' .. n .. '","value":1}')
  elseif mode == "store" then
    return wrk.format(nil, nil, nil, '{"key":"k' .. ((n * 2 + tid) % 1000) .. '","value":{"n":' .. n .. '}}')
  else
    -- the per-address submit limit (10/minute) counts X-Forwarded-For with TRUST_PROXY=1
    local ip = "10." .. tid .. "." .. math.floor(n / 250) % 250 .. "." .. n % 250
    return wrk.format(nil, nil, { ["X-Forwarded-For"] = ip, ["Content-Type"] = "application/json", ["X-Forwarded-Proto"] = "https" }, '{"name":"bench","message":"hello ' .. n .. '"}')
  end
end
