#!/usr/bin/env bash
# Peers side by side: the same trivial read tool (`bench_fixed_1kb`, a fixed 1 KB JSON) served by
#   gatehouse   `gatehouse serve --bench-tool` on SQLite, every gate on (credential lookup,
#               switches, rate buckets and a concurrency slot in the store on every call; limits
#               raised by --rate-limit-scale so they never refuse), one connection token per client
#   rmcp        the official Rust SDK, Streamable HTTP, stateless (legacy_session_mode false),
#               JSON responses, on hyper; release build
#   python      the official Python SDK (`mcp`, MCPServer/FastMCP), stateless_http=True,
#               json_response=True, on uvicorn (one worker)
#   typescript  the official TypeScript SDK (@modelcontextprotocol/sdk), stateless (a server and
#               transport per request, no session id), enableJsonResponse, on node:http
#   gatehouse-writes  the same gatehouse serving silent writes instead (`create_customer` with
#               unique arguments, each synced with its replay record and audit row before the
#               answer): issue 17 asks for half of rmcp's read rate
#   floor       no server: the store's SQL alone (examples/write_floor.rs in store-sqlite), the
#               four rows of one silent write, as many writes per synced commit as there are
#               clients, from one thread on the server's core: what SQLite itself costs
# each loaded by the same `loadgen` run (protocol 2025-06-18 without a handshake, as stateless
# servers allow), one after another, the server pinned to core 0 and the load generator to core
# 1 (when there are two). Prints calls/s, served calls/s (successful tool results), p50, p99,
# errors, server CPU per call (utime + stime from /proc/<pid>/stat over the measured window),
# peak RSS (VmHWM) and gatehouse's ratio to each; JSON lines in target/bench/peers.jsonl.
#
#   tests/bench/peers.sh [--quick] [--duration S] [--clients N] [--only "gatehouse rmcp ..."]
#
# The default runs gatehouse, rmcp, python and typescript; gatehouse-writes and floor run when
# named in --only.
#
# `--only "gatehouse-before gatehouse rmcp"` with GATEHOUSE_BEFORE_BIN=<an older gatehouse
# binary> also runs that binary the same way, for a before/after in the same run.
#
# The peers are installed from their registries (crates.io, PyPI, npm) into
# ${XDG_CACHE_HOME:-~/.cache}/gatehouse/bench/<name>-<version>/, keyed by version and built once;
# nothing of theirs is committed. Their tiny server sources live in tests/bench/peers/ and are
# copied into the cache dir at run time. The peers are unauthenticated and keep no state;
# gatehouse authenticates and runs its store-backed gates on every call: the comparison is of
# what each serves, not of equal work.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"

RMCP_VERSION=3.11.0
PY_MCP_VERSION=2.3.0
TS_SDK_VERSION=1.32.2
DURATION=30
CLIENTS=16
ONLY="gatehouse rmcp python typescript"
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) DURATION=5 ;;
        --duration) DURATION=$2; shift ;;
        --clients) CLIENTS=$2; shift ;;
        --only) ONLY=$2; shift ;;
        *) echo "usage: $0 [--quick] [--duration S] [--clients N] [--only \"gatehouse rmcp python typescript\"]" >&2; exit 2 ;;
    esac
    shift
done
PEERS_SRC="$BENCH_ROOT/tests/bench/peers"
mkdir -p "$BENCH_CACHE"

install_rmcp() {
    local dir="$BENCH_CACHE/rmcp-$RMCP_VERSION"
    if [[ -x $dir/target/release/rmcp-bench && $dir/src/main.rs -nt $PEERS_SRC/rmcp_main.rs ]]; then return; fi
    bench_step "building the rmcp $RMCP_VERSION peer (release; several minutes on two cores, once)"
    mkdir -p "$dir/src"
    cp "$PEERS_SRC/rmcp_main.rs" "$dir/src/main.rs"
    cat >"$dir/Cargo.toml" <<TOML
[package]
name = "rmcp-bench"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
rmcp = { version = "=$RMCP_VERSION", default-features = false, features = ["server", "transport-streamable-http-server"] }
hyper-util = { version = "0.1", features = ["tokio", "server-auto", "service"] }
serde_json = "1"
tokio = { version = "1", features = ["rt-multi-thread", "macros", "net"] }

[workspace]
TOML
    (cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo build --release >&2)
}

install_python() {
    local dir="$BENCH_CACHE/python-mcp-$PY_MCP_VERSION"
    if ! "$dir/bin/python" -c "import mcp.server.mcpserver, uvicorn" 2>/dev/null; then
        bench_step "installing the Python SDK mcp==$PY_MCP_VERSION"
        rm -rf "$dir"
        python3 -m venv "$dir"
        "$dir/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION" >&2
    fi
    cp "$PEERS_SRC/python_server.py" "$dir/server.py"
}

install_typescript() {
    local dir="$BENCH_CACHE/typescript-sdk-$TS_SDK_VERSION"
    if [[ ! -d $dir/node_modules/@modelcontextprotocol/sdk ]]; then
        bench_step "installing @modelcontextprotocol/sdk@$TS_SDK_VERSION"
        mkdir -p "$dir"
        (cd "$dir" && echo '{"private":true,"type":"module"}' >package.json &&
            npm install --silent --no-audit --no-fund "@modelcontextprotocol/sdk@$TS_SDK_VERSION" >&2)
    fi
    cp "$PEERS_SRC/ts_server.mjs" "$dir/server.mjs"
}

bench_build
for peer in $ONLY; do
    case $peer in
        rmcp) install_rmcp ;;
        python) install_python ;;
        typescript) install_typescript ;;
        gatehouse | gatehouse-writes) ;;
        floor) (cd "$BENCH_ROOT" && cargo build --release --locked -p store-sqlite --example write_floor >&2) ;;
        gatehouse-before) [[ -x ${GATEHOUSE_BEFORE_BIN:-} ]] || { echo "gatehouse-before needs GATEHOUSE_BEFORE_BIN" >&2; exit 2; } ;;
        *) echo "unknown peer $peer" >&2; exit 2 ;;
    esac
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-peers.XXXXXX")
OUT="$BENCH_OUT/peers.jsonl"
: >"$OUT"
echo "machine: $(bench_machine)" >&2
failed=0
bench_pinning
WARMUP=3
for peer in $ONLY; do
    PORT=$(bench_free_port)
    TOKENS=()
    TOOL=(--tool bench_fixed_1kb --expect "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
    if [[ $peer == floor ]]; then
        bench_step "floor: $CLIENTS writes per synced commit"
        "${SERVER_CPU[@]}" "$TARGET/release/examples/write_floor" --only sqlite --group "$CLIENTS" \
            --writes $((DURATION * 3000)) --json >>"$OUT" || failed=1
        continue
    fi
    case $peer in
        gatehouse-writes)
            TOOL=(--tool create_customer --args '{"name":"Load {n}","email":"load.{n}@example.com"}'
                --expect "Created customer")
            ;;&
        gatehouse | gatehouse-before | gatehouse-writes)
            NOW_BIN=$GATEHOUSE
            if [[ $peer == gatehouse-before ]]; then GATEHOUSE=$GATEHOUSE_BEFORE_BIN; fi
            rm -rf "$WORK/data"
            bench_seed "$WORK/data"
            BENCH_WRAP=("${SERVER_CPU[@]}")
            bench_serve "$WORK/data" "$PORT"
            BENCH_WRAP=()
            bench_tokens "$WORK/data" "$CLIENTS" acme "$WORK/tokens.txt"
            TOKENS=(--token-file "$WORK/tokens.txt")
            PID=$SERVE_PID
            GATEHOUSE=$NOW_BIN
            ;;
        rmcp)
            "${SERVER_CPU[@]}" "$BENCH_CACHE/rmcp-$RMCP_VERSION/target/release/rmcp-bench" "$PORT" >"$WORK/rmcp.log" 2>&1 &
            PID=$!
            ;;
        python)
            "${SERVER_CPU[@]}" "$BENCH_CACHE/python-mcp-$PY_MCP_VERSION/bin/python" \
                "$BENCH_CACHE/python-mcp-$PY_MCP_VERSION/server.py" "$PORT" >"$WORK/python.log" 2>&1 &
            PID=$!
            ;;
        typescript)
            (cd "$BENCH_CACHE/typescript-sdk-$TS_SDK_VERSION" && exec "${SERVER_CPU[@]}" node server.mjs "$PORT") >"$WORK/ts.log" 2>&1 &
            PID=$!
            ;;
    esac
    BENCH_PIDS+=("$PID")
    bench_wait_port "$PORT" "$PID"
    bench_step "$peer: $CLIENTS clients, ${DURATION}s"
    # The measured window starts after the warm-up: sample the server's CPU then and at the end.
    (sleep "$WARMUP"; bench_cpu_ticks "$PID" >"$WORK/cpu-start") &
    SAMPLER=$!
    if RESULT=$("${LOAD_CPU[@]}" "$LOADGEN" --url "http://127.0.0.1:$PORT/mcp" "${TOKENS[@]}" --clients "$CLIENTS" \
        --duration "$DURATION" --warmup "$WARMUP" --label "$peer" "${TOOL[@]}"); then :; else failed=1; fi
    CPU_END=$(bench_cpu_ticks "$PID")
    wait "$SAMPLER"
    HWM=$(bench_hwm_kb "$PID")
    CPU_US=$(bench_cpu_us_per_call "$RESULT" "$(cat "$WORK/cpu-start")" "$CPU_END")
    python3 -c '
import json, sys
r = json.loads(sys.argv[1])
r["vm_hwm_kb"] = int(sys.argv[2])
r["cpu_us_per_call"] = float(sys.argv[3])
print(json.dumps(r))' "$RESULT" "$HWM" "$CPU_US" >>"$OUT"
    bench_cleanup
done
rm -rf "$WORK"

python3 - "$OUT" "$RMCP_VERSION" "$PY_MCP_VERSION" "$TS_SDK_VERSION" <<'PY'
import json, sys
rows = {r["label"]: r for r in (json.loads(l) for l in open(sys.argv[1]) if l.strip())}
versions = {"rmcp": sys.argv[2], "python": "mcp " + sys.argv[3], "typescript": sys.argv[4], "gatehouse": "this tree",
            "gatehouse-before": "before", "gatehouse-writes": "this tree"}
g = rows.get("gatehouse")
print(f"{'server':<16} {'version':<10} {'calls/s':>8} {'served/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} {'CPU/call':>9} {'peak RSS':>9}  gatehouse vs it")
for name, r in rows.items():
    if name.startswith("sqlite"):
        print(f"{'floor':<16} {'SQLite':<10} {r['calls_per_s']:>8.0f} {r['calls_per_s']:>8.0f} {'':>7} {'':>7} {0:>6} "
              f"{r['cpu_us_per_call']:>6.0f} us {'':>9}  ({name})")
        continue
    l = r["latency_ms"]
    ratio = ""
    if g and name not in ("gatehouse", "gatehouse-writes"):
        ratio = (f"{g['ok_per_s'] / max(r['ok_per_s'], 0.1):.2f}x served/s, "
                 f"{g['cpu_us_per_call'] / max(r['cpu_us_per_call'], 0.1):.2f}x CPU/call, "
                 f"{g['latency_ms']['p99'] / l['p99']:.2f}x p99, "
                 f"{g['vm_hwm_kb'] / r['vm_hwm_kb']:.2f}x RSS")
    print(f"{name:<16} {versions[name]:<10} {r['calls_per_s']:>8.0f} {r['ok_per_s']:>8.0f} {l['p50']:>7.2f} {l['p99']:>7.2f} "
          f"{r['errors']:>6} {r['cpu_us_per_call']:>6.0f} us {r['vm_hwm_kb'] / 1024:>7.1f} MiB  {ratio}")
rmcp = rows.get("rmcp")
if rmcp:
    for name, r in rows.items():
        if name == "gatehouse-writes" or name.startswith("sqlite"):
            served = r.get("ok_per_s", r["calls_per_s"])
            print(f"{name}: {served / max(rmcp['ok_per_s'], 0.1):.2f}x rmcp's served reads "
                  f"(issue 17 asks gatehouse-writes for 0.50x)")
writes = rows.get("gatehouse-writes")
floor = next((r for name, r in rows.items() if name.startswith("sqlite")), None)
if writes and floor:
    l = writes["latency_ms"]
    print(f"gatehouse-writes: {writes['ok_per_s'] / max(floor['calls_per_s'], 0.1):.2f}x SQLite's floor "
          f"(issue 50 asks 0.80x); p99 {l['p99'] / max(l['p50'], 0.001):.1f}x p50 (issue 50: at most 4x and 10 ms)")
PY
exit $failed
