#!/usr/bin/env bash
# Throughput and latency under load: `gatehouse serve` on the embedded SQLite store (raised rate
# limits, every gate on), loaded over loopback by `loadgen` from a second process.
#
#   tests/bench/load.sh [--quick] [--duration SECONDS] [--clients "1 16 64"]
#
# Reads (`get_server_status`: authentication, switches, replay/brake lookup, rate buckets,
# concurrency slot, the tool) and silent writes (`create_customer` with a unique email per call,
# committed with its replay record and audit row) at 1, 16 and 64 concurrent clients, 60 s each
# (--quick: 5 s). Every client has its own connection token. Results: a table on stdout and
# JSON lines in target/bench/load.jsonl. Exits non-zero if any call failed.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"

DURATION=60
CLIENTS="1 16 64"
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) DURATION=5 ;;
        --duration) DURATION=$2; shift ;;
        --clients) CLIENTS=$2; shift ;;
        *) echo "usage: $0 [--quick] [--duration S] [--clients \"1 16 64\"]" >&2; exit 2 ;;
    esac
    shift
done

bench_build
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-load.XXXXXX")
bench_seed "$WORK/data"
PORT=$(bench_free_port)
bench_serve "$WORK/data" "$PORT"
max=0
for c in $CLIENTS; do ((c > max)) && max=$c; done
bench_tokens "$WORK/data" "$max" acme "$WORK/tokens.txt"

OUT="$BENCH_OUT/load.jsonl"
: >"$OUT"
echo "machine: $(bench_machine)" >&2
failed=0
for kind in read write; do
    for c in $CLIENTS; do
        if [[ $kind == read ]]; then
            set -- --tool get_server_status --args '{}'
        else
            set -- --tool create_customer --args '{"name":"Load {n}","email":"load.{n}@example.com"}'
        fi
        bench_step "$kind, $c clients, ${DURATION}s"
        "$LOADGEN" --url "http://127.0.0.1:$PORT/mcp" --token-file "$WORK/tokens.txt" \
            --clients "$c" --duration "$DURATION" --warmup 1 --label "$kind" "$@" >>"$OUT" ||
            failed=1
    done
done
HWM=$(bench_hwm_kb "$SERVE_PID")
bench_cleanup
rm -rf "$WORK"

python3 - "$OUT" "$HWM" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'calls':<8} {'clients':>7} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'calls':>8}")
for r in rows:
    l = r["latency_ms"]
    print(f"{r['label']:<8} {r['clients']:>7} {r['calls_per_s']:>9.0f} {l['p50']:>8.2f} {l['p99']:>8.2f} {r['errors']:>7} {r['calls']:>8}")
print(f"server peak RSS (VmHWM): {int(sys.argv[2]) / 1024:.1f} MiB")
if any(r["errors"] for r in rows):
    sys.exit(1)
PY
exit $failed
