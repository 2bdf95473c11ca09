#!/usr/bin/env bash
# Cold start and footprint of `gatehouse serve` (embedded SQLite store).
#
#   tests/bench/footprint.sh [--quick] [--calls N] [--runs N]
#
# 1. Binary size: the release `gatehouse` binary (the release profile strips symbols).
# 2. Cold start: time from spawning the process to the first answered `tools/list` (HTTP 200 with
#    a result), polled every millisecond over loopback; on a store seeded by an earlier start, so
#    the figure is the start itself, not the one-time demo seeding. --runs starts (default 10).
# 3. Memory: `loadgen` sends N calls (default 100,000; --quick 20,000) of get_server_status from
#    16 clients while sampling the server's VmRSS; prints the RSS after the first 10,000 calls, at
#    the end, and the peak (VmHWM). Results also in target/bench/footprint.json.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"

CALLS=100000
RUNS=10
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) CALLS=20000; RUNS=5 ;;
        --calls) CALLS=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        *) echo "usage: $0 [--quick] [--calls N] [--runs N]" >&2; exit 2 ;;
    esac
    shift
done

bench_build
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-footprint.XXXXXX")
echo "machine: $(bench_machine)" >&2

SIZE=$(stat -c %s "$GATEHOUSE")
if readelf -S "$GATEHOUSE" 2>/dev/null | grep -q '\.symtab'; then STRIPPED=no; else STRIPPED=yes; fi

# Seed the store once (not measured).
bench_seed "$WORK/data"

bench_step "cold start: $RUNS starts to the first answered tools/list"
COLD=$(python3 - "$GATEHOUSE" "$WORK/data" "$RUNS" <<'PY'
import json, os, socket, subprocess, sys, time
binary, data, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
token = next(c["token"] for c in json.load(open(f"{data}/demo-connections.json"))["connections"]
             if c["tenant"] == "acme" and c["role"] == "dispatcher" and c["toolset"] == "standard")
body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def ask(port):
    req = (f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\n"
           f"content-type: application/json\r\naccept: application/json, text/event-stream\r\n"
           f"mcp-protocol-version: 2025-06-18\r\nauthorization: Bearer {token}\r\n"
           f"content-length: {len(body)}\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(req)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data.startswith(b"HTTP/1.1 200") and b'"tools"' in data
times = []
env = dict(os.environ, GATEHOUSE_LOG="warn")
for _ in range(runs):
    port = free_port()
    start = time.perf_counter()
    p = subprocess.Popen([binary, "--data-dir", data, "serve", "--addr", f"127.0.0.1:{port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    ok = False
    while time.perf_counter() - start < 10:
        try:
            if ask(port):
                ok = True
                break
        except OSError:
            pass
        time.sleep(0.001)
    elapsed = (time.perf_counter() - start) * 1000
    p.terminate(); p.wait()
    if not ok:
        sys.exit("no answer within 10 s")
    times.append(elapsed)
times.sort()
print(json.dumps({"runs": runs, "min_ms": round(times[0], 1),
                  "median_ms": round(times[len(times) // 2], 1), "max_ms": round(times[-1], 1)}))
PY
)
echo "$COLD" >&2

bench_step "memory: $CALLS calls from 16 clients, RSS sampled"
PORT=$(bench_free_port)
bench_serve "$WORK/data" "$PORT"
bench_tokens "$WORK/data" 16 acme "$WORK/tokens.txt"
MEM=$("$LOADGEN" --url "http://127.0.0.1:$PORT/mcp" --token-file "$WORK/tokens.txt" --clients 16 \
    --duration 3600 --warmup 0 --max-calls "$CALLS" --rss-pid "$SERVE_PID" --label memory \
    --tool get_server_status)
bench_cleanup
rm -rf "$WORK"

python3 - "$SIZE" "$STRIPPED" "$COLD" "$MEM" "$BENCH_OUT/footprint.json" <<'PY'
import json, sys
size, stripped, cold, mem = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
rss = mem["rss"]
out = {"binary_bytes": size, "stripped": stripped == "yes", "cold_start": cold, "memory": {
    "calls": mem["calls"], "errors": mem["errors"], "calls_per_s": mem["calls_per_s"],
    "rss_at_10000_calls_kb": rss["at_10000_calls_kb"], "rss_last_kb": rss["last_kb"],
    "vm_hwm_kb": rss["vm_hwm_kb"]}}
json.dump(out, open(sys.argv[5], "w"), indent=2)
mib = lambda kb: f"{kb / 1024:.1f} MiB" if kb else "n/a"
print(f"binary: {size / 1048576:.1f} MiB (stripped: {stripped})")
print(f"cold start to first tools/list: min {cold['min_ms']} ms, median {cold['median_ms']} ms, max {cold['max_ms']} ms ({cold['runs']} runs)")
print(f"memory over {mem['calls']} calls ({mem['errors']} errors): RSS after 10,000 calls {mib(rss['at_10000_calls_kb'])}, "
      f"at the end {mib(rss['last_kb'])}, peak (VmHWM) {mib(rss['vm_hwm_kb'])}")
if mem["errors"]:
    sys.exit(1)
PY
