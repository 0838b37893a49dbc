#!/usr/bin/env bash
# The Restate server for `ignite serve --restate` tests and local trials.
#
#   scripts/restate-server.sh install
#       Installs the pinned official server (npm package
#       @restatedev/restate-server; the binary ships in its platform
#       sub-package) into .restate/ of the repository, once. Prints the
#       binary's path.
#   scripts/restate-server.sh start DIR
#       Starts it on 127.0.0.1 with its data in DIR (use a fresh temporary
#       folder) and three free ports, waits until it answers, and prints one
#       line on stdout: `pid=N ingress=http://127.0.0.1:P admin=http://127.0.0.1:Q`.
#       The log is DIR/server.log. Stop it with `kill N`.
#   scripts/restate-server.sh register ADMIN_URL DEPLOYMENT_URL
#       Registers a worker (`ignite serve --restate`) with the server's admin
#       API and prints the services it found.
#
# The Restate server is licensed under the Business Source License 1.1 (see
# .restate/node_modules/@restatedev/restate-server-*/LICENSE once installed).
set -euo pipefail

VERSION=1.7.12
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PREFIX="$ROOT/.restate"

binary() {
    local arch
    case "$(uname -s)-$(uname -m)" in
        Linux-x86_64) arch=linux-x64 ;;
        Linux-aarch64) arch=linux-arm64 ;;
        Darwin-x86_64) arch=darwin-x64 ;;
        Darwin-arm64) arch=darwin-arm64 ;;
        *) echo "error: no Restate server package for $(uname -s) $(uname -m)" >&2; exit 2 ;;
    esac
    echo "$PREFIX/node_modules/@restatedev/restate-server-$arch/bin/restate-server"
}

install() {
    local bin
    bin="$(binary)"
    if [[ -x "$bin" ]] && [[ "$("$bin" --version 2>/dev/null)" == "restate-server $VERSION" ]]; then
        echo "$bin"
        return
    fi
    command -v npm >/dev/null || { echo "error: npm is needed to install the Restate server" >&2; exit 2; }
    mkdir -p "$PREFIX"
    # --ignore-scripts: the binary needs no install step (and no telemetry runs).
    npm install --prefix "$PREFIX" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
        "@restatedev/restate-server@$VERSION" >&2
    [[ -x "$bin" ]] || { echo "error: the npm package did not bring $bin" >&2; exit 2; }
    echo "$bin"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
    local dir="${1:?usage: restate-server.sh start DIR}"
    local bin ingress admin node pid
    bin="$(install)"
    mkdir -p "$dir"
    ingress="$(free_port)"; admin="$(free_port)"; node="$(free_port)"
    (
        cd "$dir"
        RESTATE_INGRESS__BIND_ADDRESS="127.0.0.1:$ingress" \
        RESTATE_ADMIN__BIND_ADDRESS="127.0.0.1:$admin" \
        RESTATE_BIND_ADDRESS="127.0.0.1:$node" \
        RESTATE_ADVERTISED_ADDRESS="http://127.0.0.1:$node/" \
        RESTATE_NODE_NAME=ignite-test \
        exec "$bin" --no-logo --base-dir "$dir" --listen-mode tcp \
            --log-disable-ansi-codes true </dev/null >"$dir/server.log" 2>&1
    ) &
    pid=$!
    for _ in $(seq 1 200); do
        if curl -sf "http://127.0.0.1:$admin/health" >/dev/null 2>&1 \
            && curl -sf "http://127.0.0.1:$ingress/restate/health" >/dev/null 2>&1; then
            echo "pid=$pid ingress=http://127.0.0.1:$ingress admin=http://127.0.0.1:$admin"
            return
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "error: the Restate server stopped; its log:" >&2
            cat "$dir/server.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    echo "error: the Restate server did not answer within 20 s; its log is $dir/server.log" >&2
    exit 1
}

register() {
    local admin="${1:?usage: restate-server.sh register ADMIN_URL DEPLOYMENT_URL}"
    local uri="${2:?usage: restate-server.sh register ADMIN_URL DEPLOYMENT_URL}"
    curl -sSf -X POST "$admin/deployments" -H 'content-type: application/json' \
        -d "{\"uri\": \"$uri\", \"force\": true}"
    echo
}

case "${1:-}" in
    install) install ;;
    start) shift; start "$@" ;;
    register) shift; register "$@" ;;
    *) echo "usage: $0 install | start DIR | register ADMIN_URL DEPLOYMENT_URL" >&2; exit 2 ;;
esac
