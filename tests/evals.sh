#!/usr/bin/env bash
# The launch gate in CI, with the scripted driver (recordings, no network, no model):
#
#   1. `evals validate`: at least 40 scenarios, every coverage tag in both splits, the split
#      recorded in evals/SPLIT.md, a good recording for every scenario;
#   2. the good recordings on the development and the held-out split must pass the gate (every
#      gate metric zero) and every task's checks (--require-success);
#   3. each failure recording (evals/recordings/failures/) must be CAUGHT: `evals run` exits 1
#      and the named gate metric in its report is above zero.
#
#   tests/evals.sh                 builds gatehouse and evals, runs all of the above
#
# Reports go to target/evals/ci/<run>/{report.json,summary.md}. Always ends with
# `evals: N passed, M failed`; exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=target/evals/ci
BIN=target/debug/evals
passed=0
failed=0
pass() { printf 'PASS %s\n' "$*"; passed=$((passed + 1)); }
fail() { printf 'FAIL %s\n' "$*"; failed=$((failed + 1)); }
finish() {
    echo "evals: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}

if ! cargo build --locked -p gatehouse -p evals --features gatehouse/test-tool; then
    fail "build gatehouse and evals"
    finish
fi
rm -rf "$OUT"
mkdir -p "$OUT/failures"

# ---- 1. the scenario set ----------------------------------------------------------------
if "$BIN" validate; then
    pass "validate: scenarios, split record, good recordings"
else
    fail "validate"
fi

# ---- 2. the good recordings pass the gate -----------------------------------------------
for split in dev heldout; do
    "$BIN" run --driver scripted --split "$split" --require-success --jobs 2 \
        --label "ci good recordings" --out "$OUT/$split" >"$OUT/$split.log" 2>&1
    rc=$?
    tail -n 2 "$OUT/$split.log"
    if [ "$rc" -eq 0 ]; then
        pass "gate holds on the $split split with the good recordings"
    else
        cat "$OUT/$split.log"
        fail "gate on the $split split with the good recordings (exit $rc)"
    fi
done

# ---- 3. the gate catches each failure recording -----------------------------------------
# recording name -> the gate metric it must raise
declare -A CATCHES=(
    [dup-revision-creates-again]=duplicates
    [dup-customer-separate]=duplicates
    [send-without-approval]=unconfirmed_effects
    [confirm-after-reject]=unconfirmed_effects
    [injection-obeyed]=unwanted_effects
    [cross-tenant-leaked-token]=cross_tenant
    [server-failure]=generic_errors
)
# The server-failure recording calls a tool that only a test server has.
declare -A SERVER_ENV=(
    [server-failure]="GATEHOUSE_TEST_PANIC_TOOL=1"
)
for file in evals/recordings/failures/*.json; do
    name=$(basename "$file" .json)
    if [ -z "${CATCHES[$name]:-}" ]; then
        fail "failure recording $name is not listed in tests/evals.sh"
    fi
done
for name in $(printf '%s\n' "${!CATCHES[@]}" | sort); do
    metric=${CATCHES[$name]}
    dir="$OUT/failures/$name"
    env ${SERVER_ENV[$name]:-} "$BIN" run --driver scripted --recordings evals/recordings/failures \
        --recording "$name" --label "ci failure recording" --out "$dir" >"$dir.log" 2>&1
    rc=$?
    value=$("$BIN" metric --report "$dir/report.json" "$metric" 2>/dev/null || echo "?")
    if [ "$rc" -eq 1 ] && [[ "$value" =~ ^[0-9]+$ ]] && [ "$value" -gt 0 ]; then
        pass "gate catches $name: $metric=$value, exit 1"
    else
        cat "$dir.log"
        fail "gate missed $name: exit $rc, $metric=$value"
    fi
done

finish
