#!/usr/bin/env python3
"""Pages GET /authorizations?state=open; prints how many there are, and writes their order ids as a
Lua table to OUT when given (for bench/captures.lua). Usage: open_holds.py PORT API_KEY [OUT]"""
import json, sys, urllib.request

port, key = sys.argv[1], sys.argv[2]
ids, cursor = [], "0"
while True:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/authorizations?state=open&limit=500&cursor={cursor}",
                                     headers={"Authorization": "Bearer " + key})
    page = json.load(urllib.request.urlopen(request))
    ids += [hold["order_id"] for hold in page["authorizations"]]
    if page["next_cursor"] is None:
        break
    cursor = page["next_cursor"]
if len(sys.argv) > 3:
    open(sys.argv[3], "w").write("return {" + ",".join('"%s"' % i for i in ids) + "}\n")
print(len(ids))
