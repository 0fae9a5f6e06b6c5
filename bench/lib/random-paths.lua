-- wrk script: each request a path drawn at random from the file named by PATHS (one per line).
-- Prints "RESULT rps p50_ms p99_ms socket_errors non2xx requests" when done.
local paths = {}
for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
local id = 0
function setup(thread) thread:set("id", id); id = id + 1 end
function init(_) math.randomseed(os.time() + id * 7919) end
function request() return wrk.format("GET", paths[math.random(#paths)]) end
function done(s, latency, _)
  local e = s.errors
  io.write(string.format("RESULT %.1f %.3f %.3f %d %d %d\n", s.requests / (s.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    e.connect + e.read + e.write + e.timeout, e.status, s.requests))
end
