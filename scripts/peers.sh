#!/usr/bin/env bash
# The third-party peers ignite's tests drive, pinned, installed into .peers/
# of the repository (ignored by git). `cargo test` runs it on first use (see
# tests/support/peers.rs); .ci/run runs it too. Safe to run at any time:
# what is already installed at its pinned version is left alone, quickly.
#
#   scripts/peers.sh install [GROUP...]
#       Installs the groups (default: all of them):
#         python   a venv at .peers/python with scripts/requirements-test.txt
#         node     .peers/node/node_modules from scripts/peers/package-lock.json
#         neovim   Debian's neovim (apt-get; needs root)
#         chromium Debian's chromium, for the HTML pages' headless checks (apt-get; needs root)
#   scripts/peers.sh which NAME
#       Prints the path of one installed peer: `python` (the venv's), `nvim`, `chromium`,
#       or the name of a Node package's command (`vscode-tmgrammar-test`).
#
# Each group is installed under a lock, so parallel test processes wait for
# one install instead of racing it.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS="$ROOT/.peers"
NEOVIM_VERSION=0.7.2-7
CHROMIUM_VERSION=156.0.8078.114-1~deb12u1

die() { echo "error: $*" >&2; exit 2; }

digest() { sha256sum "$@" | sha256sum | cut -d' ' -f1; }

# Runs the command `$2...` holding the lock of group `$1`.
locked() {
    local name="$1"
    shift
    mkdir -p "$PEERS"
    exec 9>"$PEERS/$name.lock"
    flock 9
    "$@"
    exec 9>&-
}

# Runs `install_$1` unless .peers/$1.stamp holds the digest of its pins.
stamped() {
    local name="$1" pins="$2" stamp="$PEERS/$1.stamp"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$pins" ]]; then
        return
    fi
    echo "peers: installing $name into .peers/" >&2
    "install_$name"
    echo "$pins" >"$stamp"
}

install_python() {
    command -v python3 >/dev/null || die "python3 is needed for the Python peers"
    rm -rf "$PEERS/python"
    python3 -m venv "$PEERS/python" ||
        die "python3 could not make a venv (on Debian: apt-get install python3-venv)"
    "$PEERS/python/bin/pip" install --quiet --disable-pip-version-check --no-input \
        -r "$ROOT/scripts/requirements-test.txt" >&2 ||
        die "pip could not install scripts/requirements-test.txt into .peers/python"
}

install_node() {
    command -v npm >/dev/null || die "npm is needed for the Node peers"
    rm -rf "$PEERS/node"
    mkdir -p "$PEERS/node"
    cp "$ROOT/scripts/peers/package.json" "$ROOT/scripts/peers/package-lock.json" "$PEERS/node/"
    # --ignore-scripts: no package needs an install step, and none runs.
    (cd "$PEERS/node" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2) ||
        die "npm could not install scripts/peers/package-lock.json into .peers/node"
}

install_neovim() {
    if [[ "$(dpkg-query -W -f='${Version}' neovim 2>/dev/null)" == "$NEOVIM_VERSION" ]]; then
        return
    fi
    command -v apt-get >/dev/null || die "neovim $NEOVIM_VERSION comes from Debian's apt-get, which is missing"
    [[ "$(id -u)" == 0 ]] || die "installing neovim needs root: sudo apt-get install neovim=$NEOVIM_VERSION"
    echo "peers: installing neovim $NEOVIM_VERSION with apt-get (log: .peers/neovim.log)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "neovim=$NEOVIM_VERSION"; } \
        >"$PEERS/neovim.log" 2>&1 || die "apt-get could not install neovim=$NEOVIM_VERSION (see .peers/neovim.log)"
}

install_chromium() {
    if [[ "$(dpkg-query -W -f='${Version}' chromium 2>/dev/null)" == "$CHROMIUM_VERSION" ]]; then
        return
    fi
    command -v apt-get >/dev/null || die "chromium $CHROMIUM_VERSION comes from Debian's apt-get, which is missing"
    [[ "$(id -u)" == 0 ]] || die "installing chromium needs root: sudo apt-get install chromium=$CHROMIUM_VERSION"
    echo "peers: installing chromium $CHROMIUM_VERSION with apt-get (log: .peers/chromium.log)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "chromium=$CHROMIUM_VERSION" "chromium-common=$CHROMIUM_VERSION"; } \
        >"$PEERS/chromium.log" 2>&1 || die "apt-get could not install chromium=$CHROMIUM_VERSION (see .peers/chromium.log)"
}

install() {
    local groups=("$@")
    [[ ${#groups[@]} -gt 0 ]] || groups=(python node neovim chromium)
    for g in "${groups[@]}"; do
        case "$g" in
            python) locked python stamped python "$(digest "$ROOT/scripts/requirements-test.txt")" ;;
            node) locked node stamped node "$(digest "$ROOT/scripts/peers/package.json" "$ROOT/scripts/peers/package-lock.json")" ;;
            # Debian's own record says what is installed: no stamp to go stale.
            neovim) locked neovim install_neovim ;;
            chromium) locked chromium install_chromium ;;
            *) die "no peer group \`$g\` (the groups: python, node, neovim, chromium)" ;;
        esac
    done
}

which_peer() {
    local name="${1:?usage: peers.sh which NAME}" path
    case "$name" in
        python) path="$PEERS/python/bin/python" ;;
        nvim) path="$(command -v nvim || true)" ;;
        chromium) path="$(command -v chromium || true)" ;;
        *) path="$PEERS/node/node_modules/.bin/$name" ;;
    esac
    [[ -n "$path" && -x "$path" ]] || die "peer \`$name\` is not installed: run scripts/peers.sh install"
    echo "$path"
}

case "${1:-}" in
    install) shift; install "$@" ;;
    which) shift; which_peer "$@" ;;
    *) die "usage: scripts/peers.sh install [python|node|neovim|chromium...] | which NAME" ;;
esac
