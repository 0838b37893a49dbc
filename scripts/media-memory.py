#!/usr/bin/env python3
"""Peak memory of `ignite run` sending a 10 MiB PDF to a local fake provider.

    scripts/media-memory.py IGNITE [--turns N] [--mib M] [--record] [--rounds R]

IGNITE is the `ignite` binary to measure (build it with
`cargo build --release`). The script writes, in a temporary folder, a PDF
of M MiB (`%PDF-1.4`, filler, `%%EOF`) and a program whose agent reads it
through a provider of kind `openai` at a fake server on 127.0.0.1. The fake
answers with a tool call N - 1 times and then with text, so every turn
sends the document again. It runs the program twice under `/usr/bin/time
-v`: with the PDF, and with a one-word string in its place (the baseline:
the same turns, no media). It prints each peak resident size, the
difference and that difference over the file's size, and the wall times.
The fake checks that every request's `file_data` decodes to the PDF.

Then the time spent reading and encoding the file: R rounds (default 11)
of a program with no agent that only reads the PDF's media type, given the
PDF and given a tiny PDF, alternating; the difference of the median wall
times is what the input costs (reading the file, its base64, the checks of
its first and last bytes), printed whole and per MiB.

Only the standard library is used; nothing leaves the loopback.
"""

import argparse
import base64
import http.server
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PROGRAM = """
provider Fake {{
  kind openai
  base_url "{base}"
  api_key env("FAKE_KEY")
  retries 0
}}

tool Page {{
  description "Looks at one page"
  param n: integer
  exec "sh" "-c" "cat > /dev/null; echo seen"
}}

agent Reader {{
  provider Fake
  model "m"
  tools Page
  max_tool_iterations 100
  input scan: {type}
  prompt "Read {{scan}} page by page"
}}

contract Read {{
  input scan: {type}
  compute answer = Reader(scan: scan)
  output answer
}}
"""

KIND = """
contract Kind {
  input scan: document
  output scan.media_type as kind
}
"""


def reply(turn: int, turns: int) -> dict:
    """The fake's answer to request number TURN (from 1)."""
    usage = {"prompt_tokens": 10, "completion_tokens": 5}
    if turn < turns:
        call = {"id": f"c{turn}", "type": "function",
                "function": {"name": "Page", "arguments": json.dumps({"n": turn})}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"choices": [{"message": message, "finish_reason": "tool_calls"}], "usage": usage}
    message = {"role": "assistant", "content": "done"}
    return {"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage}


def file_data(value):
    """Every `file_data` string in a request body."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "file_data" and isinstance(item, str):
                yield item
            else:
                yield from file_data(item)
    elif isinstance(value, list):
        for item in value:
            yield from file_data(item)


def serve(turns: int, pdf: bytes | None) -> tuple[http.server.ThreadingHTTPServer, dict]:
    """A fake OpenAI chat server on 127.0.0.1 that checks that every
    request sends `pdf` (when given); its request counter and any wrong
    request."""
    state = {"turn": 0, "wrong": None}

    class Fake(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the handler's name)
            length = int(self.headers.get("content-length", 0))
            body = self.rfile.read(length)
            if pdf is not None:
                sent = [base64.b64decode(url.split(",", 1)[1]) for url in file_data(json.loads(body))]
                if sent != [pdf]:
                    state["wrong"] = f"request {state['turn'] + 1} does not send the PDF"
            state["turn"] += 1
            body = json.dumps(reply(state["turn"], turns)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


def measure(ignite: str, folder: Path, kind: str, scan: str, turns: int, record: bool,
            pdf: bytes | None) -> tuple[int, float]:
    """Peak RSS (KiB) and wall time (s) of one run with input `scan`."""
    server, state = serve(turns, pdf)
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    (folder / "read.ign").write_text(PROGRAM.format(base=base, type=kind))
    args = ["/usr/bin/time", "-v", ignite, "run", "read.ign", "--input", f"scan={scan}",
            "--max-bytes", "64M"]
    if record:
        args += ["--record", f"{kind}.jsonl"]
    done = subprocess.run(args, cwd=folder, capture_output=True, text=True,
                          env={"FAKE_KEY": "k", "PATH": "/usr/bin:/bin"})
    server.shutdown()
    if done.returncode != 0 or state["turn"] != turns:
        sys.exit(f"the run failed ({state['turn']} requests):\n{done.stderr}")
    if state["wrong"]:
        sys.exit(state["wrong"])
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", done.stderr).group(1)
    minutes, seconds = clock.rsplit(":", 1)
    return peak, float(minutes.split(":")[-1]) * 60 + float(seconds)


def encoding(ignite: str, folder: Path, rounds: int) -> tuple[float, float]:
    """Median wall times (s) of reading the big and the tiny PDF's kind."""
    (folder / "kind.ign").write_text(KIND)
    walls = {"big.pdf": [], "tiny.pdf": []}
    for _ in range(rounds):
        for name, times in walls.items():
            args = [ignite, "run", "kind.ign", "--input", f"scan=@{name}", "--max-bytes", "64M"]
            started = time.perf_counter()
            done = subprocess.run(args, cwd=folder, capture_output=True, text=True)
            times.append(time.perf_counter() - started)
            if done.returncode != 0 or "application/pdf" not in done.stdout:
                sys.exit(f"reading `{name}` failed:\n{done.stderr}")
    return statistics.median(walls["big.pdf"]), statistics.median(walls["tiny.pdf"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ignite")
    parser.add_argument("--turns", type=int, default=1)
    parser.add_argument("--mib", type=int, default=10)
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--rounds", type=int, default=11)
    options = parser.parse_args()
    options.ignite = str(Path(options.ignite).resolve())
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        size = options.mib << 20
        pdf = b"%PDF-1.4\n" + b" " * (size - len(b"%PDF-1.4\n") - len(b"\n%%EOF\n")) + b"\n%%EOF\n"
        (folder / "big.pdf").write_bytes(pdf)
        (folder / "tiny.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
        media, media_wall = measure(options.ignite, folder, "document", "@big.pdf", options.turns,
                                    options.record, pdf)
        plain, plain_wall = measure(options.ignite, folder, "string", "hello", options.turns,
                                    options.record, None)
        big, tiny = encoding(options.ignite, folder, options.rounds)
    over = (media - plain) * 1024
    print(f"turns {options.turns}, record {options.record}: PDF {size} bytes")
    print(f"peak RSS with the PDF {media} KiB ({media_wall:.2f} s), "
          f"without {plain} KiB ({plain_wall:.2f} s)")
    print(f"difference {over / 1e6:.1f} MB = {over / size:.2f}x the file")
    spent = big - tiny
    print(f"reading and encoding the PDF (median of {options.rounds}): {spent * 1e3:.1f} ms "
          f"= {spent * 1e3 / options.mib:.2f} ms per MiB (run {big * 1e3:.1f} ms, "
          f"with a tiny PDF {tiny * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
