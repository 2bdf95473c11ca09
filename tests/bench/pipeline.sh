#!/usr/bin/env bash
# Pipeline overhead (criterion, tests/benches/pipeline.rs): the real app on MemoryStore, every
# gate on, requests handed to the in-process HTTP service. Prints criterion's report, then the
# median time per request from target/criterion/pipeline/*/new/estimates.json.
#
#   tests/bench/pipeline.sh [--quick]
set -euo pipefail
# shellcheck source=tests/bench/lib.sh
source "$(dirname "$0")/lib.sh"
ARGS=()
[[ ${1:-} == --quick ]] && ARGS=(--quick)
echo "machine: $(bench_machine)" >&2
(cd "$BENCH_ROOT" && cargo bench --locked -p tests --bench pipeline -- ${ARGS[@]+"${ARGS[@]}"})
python3 - "$TARGET/criterion/pipeline" "$BENCH_OUT/pipeline.json" <<'PY'
import json, os, sys
root, out = sys.argv[1], sys.argv[2]
rows = {}
for d in sorted(os.listdir(root)):
    est = os.path.join(root, d, "new", "estimates.json")
    bench = os.path.join(root, d, "new", "benchmark.json")
    if os.path.exists(est) and os.path.exists(bench):
        name = json.load(open(bench))["function_id"]
        e = json.load(open(est))
        rows[name] = {"median_us": e["median"]["point_estimate"] / 1000, "mean_us": e["mean"]["point_estimate"] / 1000}
json.dump(rows, open(out, "w"), indent=2)
print(f"{'request':<42} {'median':>10} {'mean':>10}")
for name, r in rows.items():
    print(f"{name:<42} {r['median_us']:>8.1f} µs {r['mean_us']:>8.1f} µs")
PY
