#!/usr/bin/env python3
"""Same-run A/B benchmark of two `ignite` binaries.

    scripts/ab.py A B [--rounds N] [--only NAME,...] [--env-a VAR=VALUE] [--env-b VAR=VALUE]

A and B are paths to `ignite` binaries, or git revisions (anything
`git rev-parse` knows: a commit, a branch, `HEAD~3`), which are built in
release mode into `.ab/REV/` (a git worktree beside the repository's own
target, kept for the next run). The two binaries are run alternately, A then
B then A ..., over each workload, so that the load of a shared machine falls
on both alike; the script prints the median wall time of each and the ratio
B / A, then the same for the CPU time the process spent (user + system,
which moves less with the load than the wall). Ratios measured in one run
are what to compare: absolute times move with the machine's load.
`--env-a` and `--env-b` (repeatable) set variables for one side only, to
compare settings of one binary (`A A --env-b MIMALLOC_ALLOW_THP=1`).

Workloads (each one process start, timed from outside):

  startup        `ignite --version` (and `/bin/true` as the floor)
  check-small    `ignite check` of a one-line file
  check-decls    `ignite check` of 10,000 declarations
  chain          `ignite run` of a 1,000-node chain
  chain-check    `ignite check` of the same chain: with `chain`, the
                 difference of the medians (run - check) is what a run adds
                 to compiling (the engine's set-up, the run, the output)
  fan            `ignite run --trace` of a fan of 1,000 nodes, every one an
                 output; from each run's own trace: the time per node at the
                 trace's end (the last node's end / 1,000) and when the first
                 node started (both from the run's start, as the trace counts)
  agent-loop     `ignite run --trace` of an agent that makes 20 tool calls
                 against a local fake OpenAI server (21 requests); from each
                 run's trace and the server's clock: the loop's own cost per
                 request, (the agent node's duration - the server's own time
                 during that run) / requests, and the agent node's duration
                 over the server's time. The server's own time of a request
                 runs from its request line read to its reply written (the
                 parsing of its headers included); `handler` is the same
                 cost with the server's time from its handler on, after the
                 headers (as measured until session 12); `floor` is the
                 same two figures for the barest client of the same
                 conversation, run once a round (`scripts/floor_client.rs`,
                 built with `rustc -O` into `.ab/`): what any client pays
                 on this machine in this run

Only the standard library is used (and `rustc` for the floor client); the
fake server listens on 127.0.0.1.
"""

import argparse
import http.server
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TURNS = 20
FAN = 1000
# A line of `--trace`: start, duration, status, kind, node path.
ENTRY = re.compile(r"^\s*([\d.]+)ms\s+([\d.]+)ms\s+(\S+)\s+(\S+)\s+(.*)$")


def binary(spec: str) -> Path:
    """The ignite binary for SPEC: a path as it is, or a git revision built."""
    path = Path(spec)
    if path.is_file() and os.access(path, os.X_OK):
        return path.resolve()
    try:
        rev = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", spec],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    except subprocess.CalledProcessError:
        sys.exit(f"error: `{spec}` is neither an executable file nor a git revision")
    tree = ROOT / ".ab" / rev
    built = tree / "target" / "release" / "ignite"
    if not built.exists():
        if not tree.exists():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                           check=True, capture_output=True)
        print(f"building {spec} ({rev}) in {tree} ...", file=sys.stderr)
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "ignite"],
                       cwd=tree, check=True)
    return built


class Fake(http.server.BaseHTTPRequestHandler):
    """An OpenAI chat-completions server: asks for `step` until the
    conversation holds TURNS tool results, then answers "done"."""

    protocol_version = "HTTP/1.1"
    busy = 0.0  # seconds spent answering, summed
    handling = 0.0  # the part of it in `do_POST` (after the headers), summed
    requests = 0

    def setup(self):
        super().setup()
        # Headers and body go out as two writes: without this, Nagle's
        # algorithm holds the body until the client's delayed ACK (~40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def parse_request(self):
        # The server's own time starts once the request line is in: the
        # parsing of the headers is the server's work too.
        self.started = time.perf_counter()
        return super().parse_request()

    def do_POST(self):  # noqa: N802 (the handler's name)
        started, handled = self.started, time.perf_counter()
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        results = sum(1 for m in body["messages"] if m.get("role") == "tool")
        if results < TURNS:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"c{results}", "type": "function",
                "function": {"name": "step", "arguments": json.dumps({"i": results})},
            }]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": "done"}
            finish = "stop"
        reply = json.dumps({
            "id": "chatcmpl-ab", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)
        ended = time.perf_counter()
        Fake.busy += ended - started
        Fake.handling += ended - handled
        Fake.requests += 1

    def log_message(self, *_):
        pass


def workloads(dir: Path, url: str) -> dict:
    """Each workload: (argv after the binary, what it runs in)."""
    (dir / "one.ign").write_text('contract One {\n  input x: integer\n  output x\n}\n')
    decls = []
    for i in range(5000):
        decls.append(f"type T{i} {{\n  a: integer\n  b: string\n}}\n")
        decls.append(f'tool Tool{i} {{\n  description "tool {i}"\n  param p: integer\n  returns p + {i}\n}}\n')
    (dir / "decls.ign").write_text("\n".join(decls))
    chain = ["contract Chain {", "  input x: integer", "  compute n0 = x + 1"]
    chain += [f"  compute n{i} = n{i - 1} + 1" for i in range(1, 1000)]
    chain += ["  output n999", "}"]
    (dir / "chain.ign").write_text("\n".join(chain) + "\n")
    fan = ["contract Fan {", "  input x: integer"]
    fan += [f"  compute f{i} = x * {i} + 1" for i in range(FAN)]
    fan += [f"  output f{i}" for i in range(FAN)]
    fan += ["}"]
    (dir / "fan.ign").write_text("\n".join(fan) + "\n")
    (dir / "agent.ign").write_text(f"""provider Fake {{
  kind openai
  base_url "{url}/v1"
  api_key env("AB_KEY")
  retries 0
}}

tool Step {{
  description "Takes one step"
  param i: integer
  returns i + 1
}}

agent Walker {{
  provider Fake
  model "m"
  tools Step
  max_tool_iterations 100
  input q: string
  prompt "{{q}}"
}}

contract Walk {{
  input q: string
  compute answer = Walker(q: q)
  output answer
}}
""")
    return {
        "startup": ["--version"],
        "check-small": ["check", "one.ign"],
        "check-decls": ["check", "decls.ign"],
        "chain": ["run", "chain.ign", "--input", "x=1"],
        "chain-check": ["check", "chain.ign"],
        "fan": ["run", "fan.ign", "--input", "x=1", "--trace"],
        "agent-loop": ["run", "agent.ign", "--input", "q=go", "--trace"],
    }


def floor_client() -> Path:
    """`scripts/floor_client.rs` built with `rustc -O` into `.ab/` (again
    when the source is newer)."""
    source = ROOT / "scripts" / "floor_client.rs"
    built = ROOT / ".ab" / "floor-client"
    if not built.exists() or built.stat().st_mtime < source.stat().st_mtime:
        built.parent.mkdir(exist_ok=True)
        subprocess.run(["rustc", "-O", "--edition", "2021", "-o", str(built), str(source)],
                       check=True)
    return built


def cpu_of_children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(argv: list, cwd: Path, extra: dict) -> tuple:
    """The wall and CPU seconds of running `argv` to its end, and its stderr."""
    env = dict(os.environ, AB_KEY="sk-ab", NO_COLOR="1", **extra)
    cpu = cpu_of_children()
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"error: `{' '.join(map(str, argv))}` failed:\n{done.stderr.decode()}")
    return elapsed, cpu_of_children() - cpu, done.stderr.decode(errors="replace")


def entries(stderr: str, kind: str) -> list:
    """The (start, end) milliseconds of the trace's entries of `kind`."""
    found = []
    for line in stderr.splitlines():
        match = ENTRY.match(line)
        if match and match[4] == kind:
            start, duration = float(match[1]), float(match[2])
            found.append((start, start + duration))
    return found


def fan_figures(stderr: str) -> tuple:
    """Microseconds per node at the trace's end, and the first node's start (ms)."""
    nodes = entries(stderr, "compute")
    if len(nodes) != FAN:
        sys.exit(f"error: the fan's trace has {len(nodes)} compute entries, not {FAN}")
    return max(end for _, end in nodes) / FAN * 1000, min(start for start, _ in nodes)


def loop_figures(stderr: str, busy: float, handling: float, requests: int) -> tuple:
    """The loop's own milliseconds per request, the agent node's time over
    the server's, and the loop's cost as measured until session 12 (the
    server's time from its handler on), from one run's trace and the
    server's seconds."""
    agent = entries(stderr, "agent")
    if len(agent) != 1 or requests == 0:
        sys.exit(f"error: the agent run traced {len(agent)} agent nodes and made {requests} requests")
    start, end = agent[0]
    took = end - start
    return (*own_cost(took, busy, requests), own_cost(took, handling, requests)[0])


def own_cost(took: float, busy: float, requests: int) -> tuple:
    """A client's own milliseconds per request, and its time over the
    server's, from its `took` milliseconds and the server's `busy` seconds."""
    return (took - busy * 1000) / requests, took / (busy * 1000)


def floor_figures(client: Path, url: str) -> tuple:
    """The floor client's own milliseconds per request and its time over
    the server's, from one conversation (the server's figures are put back
    as they were, so the agent's are its own)."""
    busy, handling, requests = Fake.busy, Fake.handling, Fake.requests
    done = subprocess.run([client, url.removeprefix("http://"), str(TURNS)],
                          check=True, capture_output=True, text=True)
    spent, asked = Fake.busy - busy, Fake.requests - requests
    Fake.busy, Fake.handling, Fake.requests = busy, handling, requests
    return own_cost(int(done.stdout) / 1000, spent, asked)


def assignments(pairs: list) -> dict:
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            sys.exit(f"error: `{pair}` is not VAR=VALUE")
        env[name] = value
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="the baseline: a binary or a git revision")
    parser.add_argument("b", help="the candidate: a binary or a git revision")
    parser.add_argument("--rounds", type=int, default=15, help="runs of each binary per workload")
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--env-a", action="append", default=[], metavar="VAR=VALUE",
                        help="a variable set for A's runs only (repeatable)")
    parser.add_argument("--env-b", action="append", default=[], metavar="VAR=VALUE",
                        help="a variable set for B's runs only (repeatable)")
    args = parser.parse_args()
    a, b = binary(args.a), binary(args.b)
    envs = (assignments(args.env_a), assignments(args.env_b))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    dir = Path(tempfile.mkdtemp(prefix="ignite-ab-"))
    try:
        loads = workloads(dir, url)
        names = args.only.split(",") if args.only else list(loads)
        bare = floor_client() if "agent-loop" in names else None
        unknown = [n for n in names if n not in loads]
        if unknown:
            sys.exit(f"error: no workload {unknown}; the workloads: {', '.join(loads)}")
        print(f"A = {args.a} ({a}) {' '.join(args.env_a)}\n"
              f"B = {args.b} ({b}) {' '.join(args.env_b)}\n{args.rounds} rounds, alternating\n")
        print(f"{'workload':<12} {'A median':>10} {'B median':>10} {'B / A':>7}"
              f" {'A CPU':>10} {'B CPU':>10} {'B / A':>7}")
        medians = {}
        for name in names:
            argv = loads[name]
            runs = ([], [])
            figures = ([], [])
            Fake.busy, Fake.handling, Fake.requests = 0.0, 0.0, 0
            floors = []
            for _ in range(args.rounds):
                if name == "agent-loop":
                    floors.append(floor_figures(bare, url))
                for side, exe in enumerate((a, b)):
                    busy, handling, requests = Fake.busy, Fake.handling, Fake.requests
                    wall, cpu, stderr = timed([exe, *argv], dir, envs[side])
                    runs[side].append((wall, cpu))
                    if name == "fan":
                        figures[side].append(fan_figures(stderr))
                    elif name == "agent-loop":
                        figures[side].append(loop_figures(
                            stderr, Fake.busy - busy, Fake.handling - handling,
                            Fake.requests - requests))
            ma, mb = (statistics.median(wall for wall, _ in side) for side in runs)
            ca, cb = (statistics.median(cpu for _, cpu in side) for side in runs)
            extra = ""
            if name == "agent-loop" and Fake.requests:
                per = Fake.busy / Fake.requests * 1000
                extra = f"  (server: {per:.3f} ms a request, {Fake.requests} requests)"
            print(f"{name:<12} {ma * 1000:>8.2f}ms {mb * 1000:>8.2f}ms {mb / ma:>6.2f}×"
                  f" {ca * 1000:>8.2f}ms {cb * 1000:>8.2f}ms {cb / ca:>6.2f}×{extra}")
            medians[name] = (ma, mb, ca, cb)
            if {"chain", "chain-check"} <= medians.keys():
                run, check = medians.pop("chain"), medians.pop("chain-check")
                wa, wb, ua, ub = (r - c for r, c in zip(run, check))
                print(f"{'  run - check':<12} {wa * 1000:>8.2f}ms {wb * 1000:>8.2f}ms"
                      f" {'':>7} {ua * 1000:>8.2f}ms {ub * 1000:>8.2f}ms")
            if figures[0]:
                first, second = (tuple(map(statistics.median, zip(*side))) for side in figures)
                if name == "fan":
                    print(f"{'  per node':<12} {first[0]:>8.3f}µs {second[0]:>8.3f}µs"
                          f" {second[0] / first[0]:>6.2f}×   (at the trace's end)")
                    print(f"{'  first node':<12} {first[1]:>8.2f}ms {second[1]:>8.2f}ms"
                          f"           (its start in the trace)")
                else:
                    print(f"{'  per request':<12} {first[0]:>8.3f}ms {second[0]:>8.3f}ms"
                          f" {second[0] / first[0]:>6.2f}×   (the loop's own cost)")
                    print(f"{'  / server':<12} {first[1]:>9.2f}× {second[1]:>9.2f}×"
                          f"          (the agent node's time over the server's)")
                    print(f"{'  handler':<12} {first[2]:>8.3f}ms {second[2]:>8.3f}ms"
                          f" {second[2] / first[2]:>6.2f}×   (the same cost with the server's"
                          f" time from its handler on, as until session 12)")
                    own, over = map(statistics.median, zip(*floors))
                    print(f"{'  floor':<12} {own:>8.3f}ms {over:>9.2f}×"
                          f"          (the same two figures for a bare client,"
                          f" scripts/floor_client.rs: A {first[0] / own:.1f}×, B"
                          f" {second[0] / own:.1f}× its cost a request)")
            if name == "startup":
                floor = statistics.median(timed(["/bin/true"], dir, {})[0]
                                          for _ in range(args.rounds))
                print(f"{'  /bin/true':<12} {floor * 1000:>8.2f}ms"
                      f"   (A {ma / floor:.2f}×, B {mb / floor:.2f}× the floor)")
    finally:
        server.shutdown()
        shutil.rmtree(dir, ignore_errors=True)


if __name__ == "__main__":
    main()
