import json
import sys

args = json.load(sys.stdin)
print(json.dumps({"loud": (args["word"].upper() + "!") * args["times"], "cwd_has_support": __file__.endswith("shout.py")}))
