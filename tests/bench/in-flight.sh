#!/usr/bin/env bash
# Sequential clients under load are never refused: 16 connections, each used by two clients at
# once (one reading, one writing), so every connection has up to two calls in flight and every
# client sends its next call only after its answer. `gatehouse serve` on SQLite with every gate
# on (raised rate limits). Passes only with zero refused calls and zero errors.
#
#   tests/bench/in-flight.sh [--duration SECONDS] [--connections N]
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"

DURATION=20
CONNECTIONS=16
while [[ $# -gt 0 ]]; do
    case $1 in
        --duration) DURATION=$2; shift ;;
        --connections) CONNECTIONS=$2; shift ;;
        *) echo "usage: $0 [--duration S] [--connections N]" >&2; exit 2 ;;
    esac
    shift
done

bench_build
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-in-flight.XXXXXX")
trap 'bench_cleanup; rm -rf "$WORK"' EXIT
bench_seed "$WORK/data"
PORT=$(bench_free_port)
bench_serve "$WORK/data" "$PORT"
bench_tokens "$WORK/data" "$CONNECTIONS" acme "$WORK/tokens.txt"
echo "machine: $(bench_machine)" >&2

OUT="$BENCH_OUT/in-flight.jsonl"
bench_step "$CONNECTIONS connections, a reader and a writer each, ${DURATION}s"
"$LOADGEN" --url "http://127.0.0.1:$PORT/mcp" --token-file "$WORK/tokens.txt" \
    --clients "$CONNECTIONS" --duration "$DURATION" --warmup 1 --label "read (in flight with a write)" \
    --tool get_server_status --args '{}' >"$WORK/read.json" &
READER=$!
"$LOADGEN" --url "http://127.0.0.1:$PORT/mcp" --token-file "$WORK/tokens.txt" \
    --clients "$CONNECTIONS" --duration "$DURATION" --warmup 1 --label "write (in flight with a read)" \
    --tool create_customer --args '{"name":"Load {n}","email":"load.{n}@example.com"}' >"$WORK/write.json" || true
wait "$READER" || true
cat "$WORK/read.json" "$WORK/write.json" | grep '^{' >"$OUT"

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = 0
print(f"{'run':32} {'calls':>8} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}  error kinds")
for r in rows:
    lat = r["latency_ms"]
    print(f"{r['label']:32} {r['calls']:>8} {r['calls_per_s']:>9.1f} {lat['p50']:>8.2f} {lat['p99']:>8.2f} {r['errors']:>7}  {r['error_kinds'] or '-'}")
    bad += r["errors"]
sys.exit(1 if bad or len(rows) != 2 else 0)
PY
