-- wrk script: POST /payment with the storefront app's exact body, a random demo product each time,
-- Standard shipping (5.00) and 8 % tax on the goods; amounts are the server's own totals.
local products = {
  {"Clock", 5900}, {"Pen", 3200}, {"Pencil", 554}, {"Stapler", 2120}, {"Cup", 2660}, {"Catpad", 1796},
  {"Chocolate Hearts", 1364}, {"White Eraser", 1364}, {"Hammer", 1256}, {"Red Scarf", 1364},
  {"T-Ruler", 2012}, {"Whiteboard Eraser", 1040},
}
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

request = function()
  local p = products[math.random(#products)]
  local body = string.format(
    '{"gateway":"stripe","source":"tok_visa","amount":%d,"currency":"USD","description":"%s",' ..
    '"shipping_contact":"Jane Appleseed","shipping_email":"jane@example.com","shipping_street":"1 Infinite Loop",' ..
    '"shipping_city":"Cupertino","shipping_state":"CA","shipping_zip":"95014","shipping_method_name":"Standard"}',
    p[2], p[1])
  return wrk.format(nil, "/payment", nil, body)
end

done = function(summary, latency, requests)
  io.write(string.format("payments/s %.0f  p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  non-200 %d of %d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, summary.errors.status, summary.requests))
end
