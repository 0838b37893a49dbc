import json
import sys

args = json.load(sys.stdin)
if args["qty"] < 0:
    sys.exit("negative quantity for " + args["sku"])
print(json.dumps({"sku": args["sku"], "ok": args["qty"]}))
