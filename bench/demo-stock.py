"""Writes the demo catalogue's 12 products, at the demo's prices, with ample stock (10,000,000 each), as a
`ledgerd catalog import` file: the benchmarks' catalogue. Usage: python3 bench/demo-stock.py OUT.json"""
import json
import sys

names = {"Clock": "50.00", "Pen": "25.00", "Pencil": "0.50", "Stapler": "15.00", "Cup": "20.00", "Catpad": "12.00",
         "Chocolate Hearts": "8.00", "White Eraser": "8.00", "Hammer": "7.00", "Red Scarf": "8.00", "T-Ruler": "14.00",
         "Whiteboard Eraser": "5.00"}
json.dump({"products": [{"name": n, "description": "", "price": p, "stock": 10_000_000} for n, p in names.items()]},
          open(sys.argv[1], "w"))
