"""The catalog tool of catalog.ign: one product per SKU (checked, never run)."""
import json
import sys

args = json.load(sys.stdin)
print(json.dumps({"sku": args["sku"], "name": "Widget", "price": 10.0, "stock": 3}))
