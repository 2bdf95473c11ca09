#!/usr/bin/env bash
# Server CPU per `tools/list`: the owner's full toolset (about 120 KB), rights cut on every call,
# protocol 2026-07-28. The server is pinned to core 0 and `loadgen` to core 1 (when there are
# two); CPU per call is the server's utime + stime over the measured window divided by its calls.
# 16 clients by default, as in the read comparison (peers.sh): with fewer the round trip, not the
# server, sets the pace, and the server parks between calls and counts each wake-up against them.
#
#   tests/bench/list.sh [--duration S] [--clients N]
#
# With GATEHOUSE_BEFORE_BIN set, runs that binary and this tree's alternately, twice each.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"

DURATION=10
CLIENTS=16
WARMUP=2
while [[ $# -gt 0 ]]; do
    case $1 in
        --duration) DURATION=$2; shift ;;
        --clients) CLIENTS=$2; shift ;;
        *) echo "usage: $0 [--duration S] [--clients N]" >&2; exit 2 ;;
    esac
    shift
done

bench_build
bench_pinning
echo "machine: $(bench_machine)" >&2
NOW_BIN=$GATEHOUSE
RUNS=("this-tree:$NOW_BIN")
if [[ -n ${GATEHOUSE_BEFORE_BIN:-} ]]; then
    RUNS=("before:$GATEHOUSE_BEFORE_BIN" "this-tree:$NOW_BIN" "before:$GATEHOUSE_BEFORE_BIN" "this-tree:$NOW_BIN")
fi
failed=0
for run in "${RUNS[@]}"; do
    label=${run%%:*} GATEHOUSE=${run#*:}
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-list.XXXXXX")
    bench_seed "$WORK/data"
    PORT=$(bench_free_port)
    BENCH_WRAP=("${SERVER_CPU[@]}")
    bench_serve "$WORK/data" "$PORT"
    BENCH_WRAP=()
    bench_tokens "$WORK/data" "$CLIENTS" acme "$WORK/tokens.txt" olivia --toolset full
    bench_step "$label: tools/list, $CLIENTS clients, ${DURATION}s"
    (sleep "$WARMUP"; bench_cpu_ticks "$SERVE_PID" >"$WORK/cpu-start") &
    SAMPLER=$!
    RESULT=$("${LOAD_CPU[@]}" "$LOADGEN" --url "http://127.0.0.1:$PORT/mcp" --token-file "$WORK/tokens.txt" \
        --clients "$CLIENTS" --duration "$DURATION" --warmup "$WARMUP" --label "$label" \
        --method tools/list --protocol 2026-07-28 | tail -1) || failed=1
    CPU_END=$(bench_cpu_ticks "$SERVE_PID")
    wait "$SAMPLER"
    CPU_US=$(bench_cpu_us_per_call "$RESULT" "$(cat "$WORK/cpu-start")" "$CPU_END")
    python3 -c '
import json, sys
r = json.loads(sys.argv[1])
rate, errors, us = r["calls_per_s"], r["errors"], float(sys.argv[3])
print(f"{sys.argv[2]:<10} calls/s {rate:>8.0f}  errors {errors}  server CPU per call {us:.0f} us")
' "$RESULT" "$label" "$CPU_US"
    bench_cleanup
    rm -rf "$WORK"
done
exit $failed
