#!/usr/bin/env bash
# Two gatehouse binaries in alternating rounds (A B A B ...), each on a fresh data folder, the
# server pinned to core 0 and the load generator to core 1, as in peers.sh: for before/after
# comparisons that hold on a noisy machine (a pair is measured minutes apart at most).
#
#   tests/bench/ab.sh BINARY_A BINARY_B [--rounds N] [--duration S] [--clients N] [--writes]
#                     [--syscalls]
#
# Reads call `bench_fixed_1kb` (every gate on, limits raised); --writes calls `create_customer`
# with unique arguments (each committed durably with its replay record and audit row). Prints
# one line per run: binary, calls/s, p99, errors, server CPU per call, peak RSS; --syscalls adds
# the server's fsync, pwrite and pread calls per call, counted by `perf stat` over 5 s of the
# window (needs perf and a duration of at least 8 s).
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"
[[ $# -ge 2 ]] || { echo "usage: $0 BINARY_A BINARY_B [--rounds N] [--duration S] [--clients N] [--writes] [--syscalls]" >&2; exit 2; }
A=$1 B=$2
shift 2
ROUNDS=3 DURATION=8 CLIENTS=16 SYSCALLS=0
TOOL=(--tool bench_fixed_1kb)
while [[ $# -gt 0 ]]; do
    case $1 in
        --rounds) ROUNDS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --clients) CLIENTS=$2; shift ;;
        --writes) TOOL=(--tool create_customer --args '{"name":"Load {n}","email":"load.{n}@example.com"}') ;;
        --syscalls) SYSCALLS=1 ;;
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
        : >"$WORK/perf.csv"
        COUNTING=()
        if [[ $SYSCALLS == 1 ]]; then
            (sleep 3; perf stat -x, -p "$SERVE_PID" -o "$WORK/perf.csv" -e syscalls:sys_enter_fsync \
                -e syscalls:sys_enter_pwrite64 -e syscalls:sys_enter_pread64 -- sleep 5 >/dev/null 2>&1) &
            COUNTING=($!)
        fi
        RESULT=$("${LOAD_CPU[@]}" "$LOADGEN" --url "http://127.0.0.1:$PORT/mcp" --token-file "$WORK/tokens.txt" \
            --clients "$CLIENTS" --duration "$DURATION" --warmup 2 --label "round $round" "${TOOL[@]}")
        TICKS=$(( $(bench_cpu_ticks "$SERVE_PID") - $(cat "$WORK/cpu-start") ))
        [[ ${#COUNTING[@]} -eq 0 ]] || wait "${COUNTING[@]}"
        python3 - "$RESULT" "$TICKS" "$(bench_hwm_kb "$SERVE_PID")" "$GATEHOUSE" "$WORK/perf.csv" <<'PY'
import json, os, sys
r = json.loads(sys.argv[1])
cpu = int(sys.argv[2]) / os.sysconf("SC_CLK_TCK") * 1e6 / max(r["calls"], 1)
line = (f"{sys.argv[4]:<40} {r['label']}: {r['calls_per_s']:>9.1f} calls/s  "
        f"p99 {r['latency_ms']['p99']:>7.2f} ms  errors {r['errors']}  CPU/call {cpu:6.1f} us  "
        f"peak RSS {int(sys.argv[3]) / 1024:.1f} MiB")
# `perf stat -x,` rows: count,unit,event,...; the 5 s window's calls estimated from the rate.
counts = [row.split(",") for row in open(sys.argv[5]) if row[:1].isdigit()]
if counts:
    calls = r["calls_per_s"] * 5
    line += "  per call: " + ", ".join(
        f"{c[2].split('sys_enter_')[-1]} {int(c[0]) / calls:.2f}" for c in counts)
print(line)
PY
        bench_cleanup
    done
done
rm -rf "$WORK"
