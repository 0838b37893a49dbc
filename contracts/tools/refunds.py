"""Issues a refund: reads {"order_id", "amount"} on stdin, prints the receipt.

A stand-in for a payment provider, so that the example runs offline.
"""

import json
import sys

args = json.load(sys.stdin)
print(json.dumps({"refund_id": "R-" + args["order_id"], "amount": args["amount"]}))
