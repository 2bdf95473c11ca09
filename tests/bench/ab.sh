#!/usr/bin/env bash
# Two gatehouse binaries in alternating rounds (A B A B ...), each on a fresh data folder, the
# server pinned to core 0 and the load generator to core 1, as in peers.sh: for before/after
# comparisons that hold on a noisy machine (a pair is measured minutes apart at most).
#
#   tests/bench/ab.sh BINARY_A BINARY_B [--rounds N] [--duration S] [--clients N] [--writes]
#
# Reads call `bench_fixed_1kb` (every gate on, limits raised); --writes calls `create_customer`
# with unique arguments (each committed durably with its replay record and audit row). Prints
# one line per run: binary, calls/s, p99, errors, server CPU per call, peak RSS.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"
[[ $# -ge 2 ]] || { echo "usage: $0 BINARY_A BINARY_B [--rounds N] [--duration S] [--clients N] [--writes]" >&2; exit 2; }
A=$1 B=$2
shift 2
ROUNDS=3 DURATION=8 CLIENTS=16
TOOL=(--tool bench_fixed_1kb)
while [[ $# -gt 0 ]]; do
    case $1 in
        --rounds) ROUNDS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --clients) CLIENTS=$2; shift ;;
        --writes) TOOL=(--tool create_customer --args '{"name":"Load {n}","email":"load.{n}@example.com"}') ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[[ -n ${LOADGEN_BIN:-} ]] || { (cd "$BENCH_ROOT" && cargo build --release --locked -p loadgen >&2); }
bench_pinning
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-ab.XXXXXX")
echo "machine: $(bench_machine)" >&2
for round in $(seq 1 "$ROUNDS"); do
    for GATEHOUSE in "$A" "$B"; do
        rm -rf "$WORK/data"
        bench_seed "$WORK/data"
        PORT=$(bench_free_port)
        BENCH_WRAP=("${SERVER_CPU[@]}")
        bench_serve "$WORK/data" "$PORT"
        BENCH_WRAP=()
        bench_tokens "$WORK/data" "$CLIENTS" acme "$WORK/tokens.txt"
        (sleep 2; bench_cpu_ticks "$SERVE_PID" >"$WORK/cpu-start") &
        RESULT=$("${LOAD_CPU[@]}" "$LOADGEN" --url "http://127.0.0.1:$PORT/mcp" --token-file "$WORK/tokens.txt" \
            --clients "$CLIENTS" --duration "$DURATION" --warmup 2 --label "round $round" "${TOOL[@]}")
        TICKS=$(( $(bench_cpu_ticks "$SERVE_PID") - $(cat "$WORK/cpu-start") ))
        python3 -c '
import json, os, sys
r = json.loads(sys.argv[1])
cpu = int(sys.argv[2]) / os.sysconf("SC_CLK_TCK") * 1e6 / max(r["calls"], 1)
print(f"{sys.argv[4]:<40} {r['"'"'label'"'"']}: {r['"'"'calls_per_s'"'"']:>9.1f} calls/s  p99 {r['"'"'latency_ms'"'"']['"'"'p99'"'"']:>7.2f} ms  errors {r['"'"'errors'"'"']}  CPU/call {cpu:6.1f} us  peak RSS {int(sys.argv[3])/1024:.1f} MiB")' \
            "$RESULT" "$TICKS" "$(bench_hwm_kb "$SERVE_PID")" "$GATEHOUSE"
        bench_cleanup
    done
done
rm -rf "$WORK"
