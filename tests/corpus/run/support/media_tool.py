"""An `exec` tool over media: reads `{"scan": {media_type, data}, "as": KIND}`
on stdin and returns the scan itself (`as: "same"`) or the tiny GIF of the
corpus (`as: "gif"`), as `{media_type, data}`, plus nothing else."""

import base64
import json
import pathlib
import sys

args = json.load(sys.stdin)
scan = args["scan"]
size = len(base64.b64decode(scan["data"]))
if args["as"] == "gif":
    gif = pathlib.Path(__file__).parent.parent.parent / "media" / "tiny.gif"
    scan = {"media_type": "image/gif", "data": base64.b64encode(gif.read_bytes()).decode()}
elif args["as"] == "text":
    scan = f"{scan['media_type']}, {size} bytes"
json.dump(scan, sys.stdout)
