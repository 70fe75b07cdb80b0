-- wrk script: POST /payment for one of the first PRODUCTS products of bench/products.sh's catalogue ("Item 1" …,
-- each 10.00: with Standard shipping (5.00) and 8 % tax on the goods the server's total is 15.80).
local count = tonumber(os.getenv("PRODUCTS") or "1")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

request = function()
  local body = string.format(
    '{"gateway":"stripe","source":"tok_visa","amount":1580,"currency":"USD","description":"Item %d",' ..
    '"shipping_contact":"Jane Appleseed","shipping_email":"jane@example.com","shipping_street":"1 Infinite Loop",' ..
    '"shipping_city":"Cupertino","shipping_state":"CA","shipping_zip":"95014","shipping_method_name":"Standard"}',
    math.random(count))
  return wrk.format(nil, "/payment", nil, body)
end

done = function(summary, latency, requests)
  io.write(string.format("payments/s %.0f  p50 %.2f ms  p99 %.2f ms  non-200 %d of %d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status, summary.requests))
end
