#!/usr/bin/env bash
# Several `gatehouse serve` processes on one DynamoDB table (the local DynamoDB-compatible server,
# moto, started here): no limit exceeded, no write lost.
#
#   tests/bench/multi-process.sh [--processes N] [--writes N] [--burst N] [--scale N]
#
# 1. Starts moto (tests/moto_server.py, from the .venv that tests/run installs), creates the table,
#    starts N (default 3) `gatehouse serve --dynamodb-table ...` processes on it; the first seeds
#    the demo tenants. Rate limits are the defaults times --scale (default 1: the production
#    limits, 30 silent writes per connection per minute, 150 per tenant).
# 2. Writes: `loadgen` sends --writes (default 60) `create_customer` calls with unique emails,
#    split over the processes, 2 clients per process, each client its own acme connection; all of
#    them must succeed.
# 3. Burst: one new globex connection sends --burst (default 45) writes through all processes
#    (two at a time on processes 1 and 2, then the rest on the last), started at the beginning of
#    a rate window so that the whole burst falls in one window; exactly the per-connection limit
#    must succeed and every other call must be refused as rate_limited.
# 4. Reads the table back (boto3): customers created, MCP audit rows of create_customer, the
#    burst connection's rate bucket; compares them with the successful calls loadgen reported.
# Prints the figures; exits non-zero if a write was lost, a limit exceeded or a call failed for
# another reason. Results in target/bench/multi-process.json.
#
# The counts are small because moto, not gatehouse, is the bottleneck: every transaction copies
# moto's whole backend, so a write takes seconds once the table holds a few hundred items (450
# writes took 9 minutes, moto grew to 6 GB). The point here is correctness across processes.
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"

PROCESSES=3
WRITES=60
BURST=45
SCALE=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --processes) PROCESSES=$2; shift ;;
        --writes) WRITES=$2; shift ;;
        --burst) BURST=$2; shift ;;
        --scale) SCALE=$2; shift ;;
        --quick) ;;
        *) echo "usage: $0 [--processes N] [--writes N] [--burst N] [--scale N]" >&2; exit 2 ;;
    esac
    shift
done
export BENCH_SCALE=$SCALE
PY="$BENCH_ROOT/.venv/bin/python"
if ! "$PY" -c "import moto, boto3" 2>/dev/null; then
    echo "multi-process: needs moto in $BENCH_ROOT/.venv (tests/run installs it)" >&2
    exit 1
fi

bench_build
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-multi.XXXXXX")
echo "machine: $(bench_machine)" >&2
MOTO_PORT=$(bench_free_port)
"$PY" "$BENCH_ROOT/tests/moto_server.py" 127.0.0.1 "$MOTO_PORT" >"$WORK/moto.log" 2>&1 &
BENCH_PIDS+=("$!")
bench_wait_port "$MOTO_PORT" "$!"
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export GATEHOUSE_TABLE=gatehouse-bench GATEHOUSE_DYNAMODB_ENDPOINT="http://127.0.0.1:$MOTO_PORT"
"$PY" - <<'PY'
import os, boto3
db = boto3.client("dynamodb", endpoint_url=os.environ["GATEHOUSE_DYNAMODB_ENDPOINT"])
db.create_table(TableName=os.environ["GATEHOUSE_TABLE"], BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}])
PY

bench_step "$PROCESSES gatehouse serve processes on table $GATEHOUSE_TABLE (moto on $MOTO_PORT), limits x$SCALE"
PORTS=()
for i in $(seq 1 "$PROCESSES"); do
    port=$(bench_free_port)
    # Each process gets its own data dir (only the demo token file is written there).
    bench_serve "$WORK/p$i" "$port"
    PORTS+=("$port")
done
# Connections for the writes (2 per process) and one for the burst; created through the CLI on
# the same table.
bench_tokens "$WORK/p1" $((2 * PROCESSES)) acme "$WORK/writers.txt"
bench_tokens "$WORK/p1" 1 globex "$WORK/burst.txt"
RUN=$(date +%s)

bench_step "writes: $WRITES create_customer calls over $PROCESSES processes"
per=$(((WRITES + PROCESSES - 1) / PROCESSES))
pids=()
for i in $(seq 0 $((PROCESSES - 1))); do
    sed -n "$((2 * i + 1)),$((2 * i + 2))p" "$WORK/writers.txt" >"$WORK/writers-$i.txt"
    "$LOADGEN" --url "http://127.0.0.1:${PORTS[$i]}/mcp" --token-file "$WORK/writers-$i.txt" \
        --clients 2 --warmup 0 --duration 600 --max-calls "$per" --label "writes p$((i + 1))" \
        --tool create_customer --args "{\"name\":\"MP $RUN {n}\",\"email\":\"mp.{n}@example.com\"}" \
        >"$WORK/writes-$i.json" &
    pids+=("$!")
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

# Start the burst at the beginning of a rate window (windows are aligned to multiples of 60 s).
now=$(date +%s)
wait_s=$(((60 - now % 60) % 60))
bench_step "burst: waiting ${wait_s}s for the next rate window, then $BURST writes on one connection"
sleep "$wait_s"
b1=$((BURST * 2 / 5))
b3=$((BURST - 2 * b1))
pids=()
for i in 0 1; do
    "$LOADGEN" --url "http://127.0.0.1:${PORTS[$((i % PROCESSES))]}/mcp" --token-file "$WORK/burst.txt" \
        --clients 1 --warmup 0 --duration 600 --max-calls "$b1" --show-errors 0 --label "burst p$((i + 1))" \
        --tool create_customer --args "{\"name\":\"MP $RUN burst {n}\",\"email\":\"mp.burst.{n}@example.com\"}" \
        >"$WORK/burst-$i.json" &
    pids+=("$!")
done
for pid in "${pids[@]}"; do wait "$pid" || true; done
"$LOADGEN" --url "http://127.0.0.1:${PORTS[$((PROCESSES - 1))]}/mcp" --token-file "$WORK/burst.txt" \
    --clients 1 --warmup 0 --duration 600 --max-calls "$b3" --show-errors 0 --label "burst p$PROCESSES" \
    --tool create_customer --args "{\"name\":\"MP $RUN burst {n}\",\"email\":\"mp.burst.{n}@example.com\"}" \
    >"$WORK/burst-2.json" || true
BURST_END=$(date +%s)
# The servers and moto stop on exit (lib.sh); the work dir goes with them.
trap 'bench_cleanup; rm -rf "$WORK"' EXIT

"$PY" - "$WORK" "$RUN" "$SCALE" "$BURST_END" "$BENCH_OUT/multi-process.json" <<'PY'
import glob, json, os, sys
import boto3
work, run, scale, burst_end, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
load = lambda pattern: [json.load(open(f)) for f in sorted(glob.glob(f"{work}/{pattern}"))]
writes, burst = load("writes-*.json"), load("burst-*.json")
db = boto3.client("dynamodb", endpoint_url=os.environ["GATEHOUSE_DYNAMODB_ENDPOINT"])
items, kwargs = [], {"TableName": os.environ["GATEHOUSE_TABLE"]}
while True:
    page = db.scan(**kwargs)
    items += page["Items"]
    if "LastEvaluatedKey" not in page:
        break
    kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
s = lambda item, k: item.get(k, {}).get("S", "")
text = lambda item: " ".join(v["S"] for v in item.values() if "S" in v)
customers = [i for i in items if s(i, "pk").endswith("#customer") and f"MP {run} " in text(i)]
burst_customers = [i for i in customers if f"MP {run} burst " in text(i)]
audit = [i for i in items if s(i, "pk").endswith("#audit") and s(i, "action") == "create_customer"
         and s(i, "channel") == "mcp" and s(i, "outcome") in ("ok", "")]
burst_audit = [i for i in audit if s(i, "pk") == "globex#audit"]
# The burst connection's buckets: globex's only connection-level rate items (the key layout is
# `globex#rate` + `<connection>#...` or `globex#rate#<connection>` + ..., depending on the version).
buckets = [i for i in items if s(i, "pk").startswith("globex#rate")
           and "con_" in s(i, "pk") + s(i, "sk")]
conn_limit = 30 * scale
w_ok = sum(r["ok"] for r in writes); w_err = sum(r["errors"] for r in writes)
b_ok = sum(r["ok"] for r in burst); b_calls = sum(r["calls"] for r in burst)
b_refused = sum(n for r in burst for k, n in r["error_kinds"].items() if k == "isError rate_limited")
b_other = sum(r["errors"] for r in burst) - b_refused
report = {
    "processes": len(writes), "limits_scale": scale, "per_connection_write_limit": conn_limit,
    "writes": {"calls": sum(r["calls"] for r in writes), "ok": w_ok, "errors": w_err,
               "calls_per_s": round(sum(r["calls_per_s"] for r in writes), 1),
               "p99_ms": max(r["latency_ms"]["p99"] for r in writes)},
    "burst": {"calls": b_calls, "ok": b_ok, "refused_rate_limited": b_refused, "other_errors": b_other,
              "expected_ok": min(b_calls, conn_limit), "expected_refused": max(0, b_calls - conn_limit)},
    "table": {"customers_created": len(customers), "of_which_burst": len(burst_customers),
              "mcp_audit_rows_create_customer": len(audit), "audit_rows_of_burst": len(burst_audit),
              "burst_connection_buckets": [{"sk": s(b, "sk"), "count": int(b["count"]["N"])} for b in buckets if "count" in b]},
}
json.dump(report, open(out, "w"), indent=2)
print(json.dumps(report, indent=2))
problems = []
if w_err or b_other:
    problems.append("calls failed for a reason other than the rate limit")
if len(customers) != w_ok + b_ok:
    problems.append(f"customers in the table {len(customers)} != successful calls {w_ok + b_ok}")
if len(audit) != w_ok + b_ok:
    problems.append(f"audit rows {len(audit)} != successful calls {w_ok + b_ok}")
if b_ok > conn_limit:
    problems.append(f"burst: {b_ok} writes admitted on one connection, limit {conn_limit}")
if b_ok != min(b_calls, conn_limit) or b_refused != max(0, b_calls - conn_limit):
    problems.append("burst: admitted/refused differ from the limit (did the burst straddle a window?)")
for p in problems:
    print("PROBLEM:", p)
print("multi-process:", "FAILED" if problems else
      f"ok: {w_ok + b_ok} writes, each one a customer row and an audit row; "
      f"burst {b_ok} admitted (limit {conn_limit}), {b_refused} refused = calls over the limit")
sys.exit(1 if problems else 0)
PY
