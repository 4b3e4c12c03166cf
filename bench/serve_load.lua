-- wrk script for bench/serve_load.py: each request posts one sentence of
-- $LOOM_SENTENCES (one per line) to /v1/translate, the threads walking the
-- file from different places; `done` prints one JSON line with the counts
-- and latency percentiles (milliseconds).

local sentences = {}
for line in io.lines(os.getenv("LOOM_SENTENCES")) do
  sentences[#sentences + 1] = line
end

local function escape(s)
  s = s:gsub('\\', '\\\\'):gsub('"', '\\"')
  s = s:gsub('[%c]', function(c) return string.format('\\u%04x', c:byte()) end)
  return s
end

local bodies = {}
for i, s in ipairs(sentences) do
  bodies[i] = '{"sentences": ["' .. escape(s) .. '"]}'
end

local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("offset", counter * 7919)
  table.insert(threads, thread)
end

local next_index = 0
non200 = 0 -- global: done() reads it from each thread

function init(args)
  next_index = offset or 0
end

function request()
  next_index = next_index + 1
  local body = bodies[(next_index % #bodies) + 1]
  return wrk.format("POST", "/v1/translate",
                    {["Content-Type"] = "application/json"}, body)
end

function response(status, headers, body)
  if status ~= 200 then
    non200 = non200 + 1
  end
end

function done(summary, latency, requests)
  local non200_total = 0
  for _, thread in ipairs(threads) do
    non200_total = non200_total + (thread:get("non200") or 0)
  end
  io.write(string.format(
    '{"requests": %d, "duration_s": %.3f, "non200": %d, "socket_errors": %d, ' ..
    '"p50_ms": %.3f, "p95_ms": %.3f, "p99_ms": %.3f, "mean_ms": %.3f}\n',
    summary.requests, summary.duration / 1e6, non200_total,
    summary.errors.connect + summary.errors.read + summary.errors.write +
      summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, latency.mean / 1000))
end
