#!/usr/bin/env bash
# Official MCP SDK clients against a freshly started `gatehouse serve`.
#
#   tests/sdk-clients.sh
#
# The official TypeScript SDK client (npm @modelcontextprotocol/sdk) and the official Python SDK
# client (PyPI mcp), at the versions pinned in tests/sdk/package.json and
# tests/sdk/requirements.txt, each connect over Streamable HTTP to `gatehouse serve` (temp data
# dir, free port), list tools (must include get_server_status) and call get_server_status (must
# succeed with structuredContent.store_backend == "sqlite"). The Python client does it twice:
# once negotiating 2026-07-28 (server/discover) and once with the legacy initialize handshake.
#
# Installs need only the npm registry and PyPI. They are cached outside the repo, keyed by
# version, in ${XDG_CACHE_HOME:-~/.cache}/gatehouse/sdk-ts-<version>/ (npm --prefix) and
# .../sdk-py-<version>/ (a venv); a missing or half-done cache is (re)built.
#
# Prints one line per client and, last, `sdk clients: N passed, M failed`; exits non-zero if any
# client failed. A failing client prints every HTTP exchange it made. SDK_TRACE=1 prints them
# on success too. GATEHOUSE_BIN overrides the binary (default target/debug/gatehouse, built
# with `cargo build -p gatehouse` if missing): another product's own program (tests/run runs
# the helpdesk's too), with SDK_TENANT_SETTINGS its workspace settings' flags (default the
# booking product's); PYTHON the interpreter for the venv.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SDK_DIR="$ROOT/tests/sdk"
BIN=${GATEHOUSE_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/gatehouse}
CACHE=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gatehouse
CLIENT_TIMEOUT=90
TENANT_SETTINGS=${SDK_TENANT_SETTINGS---currency EUR --tax-rate 19}

TS_VERSION=$(sed -n 's/.*"@modelcontextprotocol\/sdk": *"\([^"]*\)".*/\1/p' "$SDK_DIR/package.json")
PY_VERSION=$(sed -n 's/^mcp==\(.*\)$/\1/p' "$SDK_DIR/requirements.txt")
if [[ -z $TS_VERSION || -z $PY_VERSION ]]; then
    echo "sdk-clients: cannot read the pinned SDK versions from $SDK_DIR" >&2
    exit 1
fi
TS_HOME="$CACHE/sdk-ts-$TS_VERSION"
PY_HOME="$CACHE/sdk-py-$PY_VERSION"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-sdk.XXXXXX")
SERVER_PID=
cleanup() {
    if [[ -n $SERVER_PID ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Runs "$@" with its output in a log; on failure shows the log's tail and returns non-zero.
quietly() {
    local log=$1
    shift
    if ! "$@" >"$log" 2>&1; then
        echo "sdk-clients: failed: $*" >&2
        tail -n 40 "$log" | sed 's/^/    /' >&2
        return 1
    fi
}

# A hash of the pin file, so a changed transitive pin rebuilds a cache of the same version.
pin_hash() { sha256sum "$1" | cut -c1-16; }

# Serialises installs into one cache folder between concurrent runs, where flock exists.
with_lock() {
    local lock=$1
    shift
    if command -v flock >/dev/null; then
        (flock 9 && "$@") 9>"$lock"
    else
        "$@"
    fi
}

# ---- the TypeScript SDK -------------------------------------------------------------------
ts_ready() {
    [[ -f $TS_HOME/.installed && $(cat "$TS_HOME/.installed") == "$(pin_hash "$SDK_DIR/package.json")" ]]
}
install_ts() {
    ts_ready && return 0
    # Installed into a fresh folder next to the final one and moved in place when complete, so
    # an interrupted install never looks finished.
    local tmp="$TS_HOME.tmp.$$"
    rm -rf "$tmp" && mkdir -p "$tmp"
    cp "$SDK_DIR/package.json" "$tmp/package.json"
    quietly "$WORK/npm-install.log" \
        npm install --prefix "$tmp" --no-audit --no-fund --no-update-notifier --loglevel=error || {
        rm -rf "$tmp"
        return 1
    }
    pin_hash "$SDK_DIR/package.json" >"$tmp/.installed"
    rm -rf "$TS_HOME" && mv "$tmp" "$TS_HOME"
}
setup_ts() {
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "node and npm are needed (Node >= 20) for the TypeScript SDK client"
        return 1
    fi
    local major
    major=$(node -p 'process.versions.node.split(".")[0]')
    if ((major < 20)); then
        echo "Node $(node --version) is too old: @modelcontextprotocol/sdk $TS_VERSION needs Node >= 20"
        return 1
    fi
    mkdir -p "$CACHE"
    ts_ready || with_lock "$CACHE/sdk-ts-$TS_VERSION.lock" install_ts
}

# ---- the Python SDK ---------------------------------------------------------------------
PYTHON=${PYTHON:-python3}
py_ready() {
    [[ -f $PY_HOME/.installed && $(cat "$PY_HOME/.installed") == "$(pin_hash "$SDK_DIR/requirements.txt")" ]] &&
        "$PY_HOME/bin/python" -c 'import mcp' 2>/dev/null
}
install_py() {
    py_ready && return 0
    # A venv cannot be moved, so it is built in place; the stamp written last marks it complete.
    rm -rf "$PY_HOME"
    quietly "$WORK/venv.log" "$PYTHON" -m venv "$PY_HOME" || return 1
    quietly "$WORK/pip-install.log" "$PY_HOME/bin/pip" install --quiet --disable-pip-version-check \
        --no-input -r "$SDK_DIR/requirements.txt" || {
        rm -rf "$PY_HOME"
        return 1
    }
    pin_hash "$SDK_DIR/requirements.txt" >"$PY_HOME/.installed"
}
setup_py() {
    if ! command -v "$PYTHON" >/dev/null; then
        echo "$PYTHON is needed (Python >= 3.10) for the Python SDK client"
        return 1
    fi
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
        echo "$("$PYTHON" --version 2>&1) is too old: mcp $PY_VERSION needs Python >= 3.10"
        return 1
    fi
    mkdir -p "$CACHE"
    py_ready || with_lock "$CACHE/sdk-py-$PY_VERSION.lock" install_py
}

# ---- the server -------------------------------------------------------------------------
if [[ ! -x $BIN ]]; then
    if [[ -n ${GATEHOUSE_BIN:-} ]]; then
        echo "sdk-clients: GATEHOUSE_BIN=$GATEHOUSE_BIN is not an executable" >&2
        exit 1
    fi
    echo "sdk-clients: $BIN missing, building it (cargo build -p gatehouse)"
    cargo build -p gatehouse
fi

# A client whose SDK cannot be set up fails by itself; the other still runs.
declare -A SETUP_ERR=()
for client in typescript python; do
    setup=setup_ts
    [[ $client == python ]] && setup=setup_py
    if ! out=$($setup 2>&1); then
        SETUP_ERR[$client]=${out:-setup failed}
    fi
done

DATA_DIR="$WORK/data"
SERVER_LOG="$WORK/server.log"
mkdir -p "$DATA_DIR"
# Every MCP request needs a credential: a member and a connection token for this run.
# shellcheck disable=SC2086 # the settings are flags, split on purpose
"$BIN" tenant create sdk-tests --data-dir "$DATA_DIR" --name "SDK tests" --zone Europe/Berlin $TENANT_SETTINGS >/dev/null
"$BIN" member set --data-dir "$DATA_DIR" --tenant sdk-tests --member owner --role owner >/dev/null
MCP_TOKEN=$("$BIN" token create --data-dir "$DATA_DIR" --tenant sdk-tests --member owner --client "sdk client tests" --json \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
export MCP_TOKEN
"$BIN" serve --addr 127.0.0.1:0 --data-dir "$DATA_DIR" >"$WORK/server.out" 2>"$SERVER_LOG" &
SERVER_PID=$!
URL=
for _ in $(seq 1 200); do
    first=$(head -n 1 "$SERVER_LOG" 2>/dev/null || true)
    if [[ $first =~ serving\ MCP\ at\ (http://127\.0\.0\.1:[0-9]+/mcp)$ ]]; then
        URL=${BASH_REMATCH[1]}
        break
    fi
    if [[ -n $first && $(wc -l <"$SERVER_LOG") -ge 1 && $first != *"serving MCP at"* ]]; then
        break # a first line that is not the banner
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
done
if [[ -z $URL ]]; then
    echo "sdk-clients: gatehouse serve did not print 'gatehouse <version> serving MCP at http://127.0.0.1:<port>/mcp' as its first stderr line; its stderr:" >&2
    sed 's/^/    /' "$SERVER_LOG" >&2
    echo "sdk clients: 0 passed, 2 failed"
    exit 1
fi
echo "gatehouse serving at $URL"

# ---- the clients ------------------------------------------------------------------------
PASSED=0
FAILED=0
run_client() {
    local name=$1
    shift
    local out="$WORK/client-$name.out"
    if [[ -n ${SETUP_ERR[$name]:-} ]]; then
        printf '%s\n' "${SETUP_ERR[$name]}" | sed 's/^/  /'
        echo "sdk client [$name]: FAILED (setup)"
        FAILED=$((FAILED + 1))
        return
    fi
    local rc=0
    timeout "$CLIENT_TIMEOUT" "$@" >"$out" 2>&1 </dev/null || rc=$?
    sed 's/^/  /' "$out"
    if ((rc == 0)); then
        echo "sdk client [$name]: ok"
        PASSED=$((PASSED + 1))
    else
        if ((rc == 124)); then
            echo "  (killed after ${CLIENT_TIMEOUT}s)"
        fi
        echo "sdk client [$name]: FAILED (exit $rc)"
        FAILED=$((FAILED + 1))
    fi
}
run_client typescript env SDK_NODE_MODULES="$TS_HOME/node_modules" node "$SDK_DIR/client.mjs" "$URL"
run_client python "$PY_HOME/bin/python" "$SDK_DIR/client.py" "$URL"

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "  gatehouse serve exited during the run; its stderr:"
    sed 's/^/    /' "$SERVER_LOG"
fi
echo "sdk clients: $PASSED passed, $FAILED failed"
((FAILED == 0))
