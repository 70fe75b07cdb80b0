-- wrk script: the console's pages as a signed-in operator's browser asks for them (its session cookie, COOKIE):
-- PAGE=today (/console/today), PAGE=order (/console/orders/{id}, a random order from ORDERS), PAGE=batch
-- (/console/settlements/BATCH), or PAGE=path with PATH_ (one path). Prints p50/p90/p99 and the non-2xx count.
local page = os.getenv("PAGE") or "today"
local orders = page == "order" and dofile(os.getenv("ORDERS")) or nil
wrk.method = "GET"
wrk.headers["Cookie"] = os.getenv("COOKIE")

request = function()
  if page == "order" then return wrk.format(nil, "/console/orders/" .. orders[math.random(#orders)]) end
  if page == "batch" then return wrk.format(nil, "/console/settlements/" .. os.getenv("BATCH")) end
  if page == "path" then return wrk.format(nil, os.getenv("PATH_")) end
  return wrk.format(nil, "/console/today")
end

done = function(summary, latency, requests)
  io.write(string.format("%-6s %6.1f pages/s  p50 %7.2f ms  p90 %7.2f ms  p99 %7.2f ms  max %7.2f ms  non-2xx %d of %d\n", page,
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000, summary.errors.status, summary.requests))
end
