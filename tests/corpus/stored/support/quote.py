"""Quotes every sku at 1.5: a tool answer that fits `Quote`."""
import json
import sys

args = json.load(sys.stdin)
print(json.dumps({"sku": args["sku"], "price": 1.5}))
