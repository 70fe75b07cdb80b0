-- wrk script: POST /orders/{id}/capture {"amount": "0.01"} with the operator key, random order each time.
local ids = dofile(os.getenv("ORDERS"))
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("API_KEY")
wrk.body = '{"amount": "0.01"}'

-- Each capture carries its own Idempotency-Key (the daemon requires one): this run, this thread, a counter.
local run = tostring(os.time())
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local counter = 0
request = function()
  counter = counter + 1
  -- wrk.format takes the headers given instead of wrk.headers, not beside them: the key joins a copy of them.
  local headers = {}
  for name, value in pairs(wrk.headers) do headers[name] = value end
  headers["Idempotency-Key"] = "bench-" .. run .. "-" .. tostring(tid) .. "-" .. counter
  return wrk.format(nil, "/orders/" .. ids[math.random(#ids)] .. "/capture", headers)
end

done = function(summary, latency, requests)
  io.write(string.format("captures/s %.0f  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  non-200 %d of %d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, summary.errors.status, summary.requests))
end
