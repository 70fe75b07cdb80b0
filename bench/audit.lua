-- wrk script: GET /orders/{id}/history (MODE=history) or GET /orders/{id}?as_of=AS_OF (MODE=asof) for
-- random orders from ORDERS (the orders.lua `ledgerd bench audit` wrote), with an auditor key.
local orders = dofile(os.getenv("ORDERS"))
local mode = os.getenv("MODE") or "history"
local asof = os.getenv("AS_OF") or "1"
wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("API_KEY")

request = function()
  local id = orders[math.random(#orders)]
  if mode == "asof" then
    return wrk.format(nil, "/orders/" .. id .. "?as_of=" .. asof)
  end
  return wrk.format(nil, "/orders/" .. id .. "/history")
end

done = function(summary, latency, requests)
  io.write(string.format("%s: %.0f requests/s  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  non-2xx %d of %d\n", mode,
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, summary.errors.status, summary.requests))
end
