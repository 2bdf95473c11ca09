#!/usr/bin/env bash
# Instructions per call, counted by valgrind's callgrind: a measure that does not move with the
# machine's load, for changes too small for the timed benchmarks to see (not part of CI).
#
#   tests/bench/instructions.sh [--calls N] [--tool read|write|list] [--rmcp] [BINARY...]
#
# Each server runs under callgrind twice, answering 500 and then 500 + N calls (4 clients, one
# connection token each, every gate on); the difference of the two totals over N is what one
# call costs in user space, start-up cancelled out. Kernel time (sockets) is not counted.
# BINARY: gatehouse binaries to compare (default: target/release/gatehouse); --rmcp adds the rmcp
# peer of peers.sh on the same 1 KB read (built by `tests/bench/peers.sh --only rmcp` first).
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"
CALLS=2000 KIND=read RMCP=0 BINARIES=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --calls) CALLS=$2; shift ;;
        --tool) KIND=$2; shift ;;
        --rmcp) RMCP=1 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) BINARIES+=("$1") ;;
    esac
    shift
done
command -v valgrind >/dev/null || { echo "instructions: valgrind is not installed" >&2; exit 1; }
[[ ${#BINARIES[@]} -gt 0 ]] || { bench_build; BINARIES=("$GATEHOUSE"); }
[[ -n ${LOADGEN_BIN:-} ]] || { (cd "$BENCH_ROOT" && cargo build --release --locked -p loadgen >&2); }
case $KIND in
    read) TOOL=(--tool bench_fixed_1kb) ;;
    write) TOOL=(--tool create_customer --args '{"name":"Load {n}","email":"load.{n}@example.com"}') ;;
    list) TOOL=(--method tools/list --protocol 2026-07-28) ;;
    *) echo "--tool is read, write or list" >&2; exit 2 ;;
esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-instructions.XXXXXX")
RMCP_BIN="$BENCH_CACHE/rmcp-3.11.0/target/release/rmcp-bench"

# total SERVER CALLS: the callgrind total of one server process that answered CALLS calls.
total() {
    local server=$1 calls=$2 port out="$WORK/cg.out"
    rm -f "$out"* && port=$(bench_free_port)
    local grind=(valgrind --tool=callgrind --cache-sim=no --callgrind-out-file="$out")
    if [[ $server == rmcp ]]; then
        "${grind[@]}" "$RMCP_BIN" "$port" >"$WORK/rmcp.log" 2>&1 &
        SERVE_PID=$! && BENCH_PIDS+=("$SERVE_PID")
        bench_wait_port "$port" "$SERVE_PID"
        echo unused >"$WORK/tokens.txt"
    else
        rm -rf "$WORK/data" && GATEHOUSE=$server && bench_seed "$WORK/data"
        bench_tokens "$WORK/data" 4 acme "$WORK/tokens.txt"
        BENCH_WRAP=("${grind[@]}") && bench_serve "$WORK/data" "$port" && BENCH_WRAP=()
    fi
    "$LOADGEN" --url "http://127.0.0.1:$port/mcp" --token-file "$WORK/tokens.txt" --clients 4 \
        --duration 3600 --warmup 0 --max-calls "$calls" "${TOOL[@]}" >"$WORK/load.json" 2>/dev/null
    grep -q '"errors":0,' "$WORK/load.json" || { echo "instructions: calls failed: $(cat "$WORK/load.json")" >&2; exit 1; }
    kill -TERM "$SERVE_PID" && wait "$SERVE_PID" 2>/dev/null || true
    BENCH_PIDS=()
    awk '/^(summary|totals):/ {print $2; exit}' "$out"*
}

SERVERS=("${BINARIES[@]}")
[[ $RMCP == 0 ]] || SERVERS+=(rmcp)
echo "machine: $(bench_machine); valgrind $(valgrind --version); $KIND, $CALLS calls measured"
for server in "${SERVERS[@]}"; do
    base=$(total "$server" 500)
    more=$(total "$server" $((500 + CALLS)))
    printf '%-48s %9d instructions per call\n' "$server" $(((more - base) / CALLS))
done
rm -rf "$WORK"
