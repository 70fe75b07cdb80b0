-- wrk script for bench/openapi-overhead.sh. OP=capture: POST /orders/{id}/capture {"amount": "20.00"} with an
-- Idempotency-Key (the same request every time, built once: the benchmark's server keeps no idempotency store, and a
-- request() function would spend wrk's CPU, on the same two cores, per request). Otherwise the URL as given (GET).
-- Prints one line the script reads: requests, duration, non-2xx answers, socket errors, latency percentiles.
if os.getenv("OP") == "capture" then
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Idempotency-Key"] = "bench-capture-1"
  wrk.body = '{"amount": "20.00"}'
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("requests %d duration_us %d non2xx %d socket_errors %d p50_us %d p99_us %d\n",
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
