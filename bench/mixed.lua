-- wrk script: a mixed day, the storefront and the back office together, in a fixed rotation of ten requests per
-- connection: six payments (POST /payment, as bench/payments.lua), three captures of 0.01 on authorized orders
-- (POST /orders/{id}/capture with the operator key, as bench/captures.lua) and one read of an order
-- (GET /orders/{id}). Every request counts as one operation. Needs ORDERS (a Lua file of order ids,
-- bench/open_holds.py) and API_KEY.
local ids = dofile(os.getenv("ORDERS"))
local key = "Bearer " .. os.getenv("API_KEY")
local products = {
  {"Clock", 5900}, {"Pen", 3200}, {"Pencil", 554}, {"Stapler", 2120}, {"Cup", 2660}, {"Catpad", 1796},
  {"Chocolate Hearts", 1364}, {"White Eraser", 1364}, {"Hammer", 1256}, {"Red Scarf", 1364},
  {"T-Ruler", 2012}, {"Whiteboard Eraser", 1040},
}
local run = tostring(os.time())
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local counter = 0
request = function()
  counter = counter + 1
  local slot = counter % 10
  if slot < 6 then
    local p = products[math.random(#products)]
    local body = string.format(
      '{"gateway":"stripe","source":"tok_visa","amount":%d,"currency":"USD","description":"%s",' ..
      '"shipping_contact":"Jane Appleseed","shipping_email":"jane@example.com","shipping_street":"1 Infinite Loop",' ..
      '"shipping_city":"Cupertino","shipping_state":"CA","shipping_zip":"95014","shipping_method_name":"Standard"}',
      p[2], p[1])
    return wrk.format("POST", "/payment", {["Content-Type"] = "application/json"}, body)
  elseif slot < 9 then
    local headers = {
      ["Content-Type"] = "application/json", ["Authorization"] = key,
      ["Idempotency-Key"] = "mixed-" .. run .. "-" .. tostring(tid) .. "-" .. counter,
    }
    return wrk.format("POST", "/orders/" .. ids[math.random(#ids)] .. "/capture", headers, '{"amount": "0.01"}')
  else
    return wrk.format("GET", "/orders/" .. ids[math.random(#ids)], {["Authorization"] = key})
  end
end

done = function(summary, latency, requests)
  io.write(string.format("operations/s %.0f  p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  non-2xx %d of %d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, summary.errors.status, summary.requests))
end
