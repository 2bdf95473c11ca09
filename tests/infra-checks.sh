#!/usr/bin/env bash
# Checks of the deployment template, infra/template.json (AWS SAM).
#
#   tests/infra-checks.sh            cfn-lint, checkov and the template tests
#   tests/infra-checks.sh --no-cargo cfn-lint and checkov only (when `cargo test` already ran
#                                    the template tests, as in tests/run)
#
# 1. cfn-lint: the template is valid CloudFormation/SAM, with no error and no warning.
# 2. checkov: no failed policy check; every skip is justified in the template, in the skipped
#    resource's Metadata (checkov.skip[].comment).
# 3. the template tests (tests/it/infra.rs, `cargo test -p tests --test it -- infra::`): every
#    Ref, GetAtt and Fn::Sub variable resolves; the table agrees with store_dynamodb::schema; IAM
#    grants exactly what the DynamoDB backend calls, with no wildcard; no secret in the
#    environment.
#
# cfn-lint and checkov come from PyPI at the versions pinned (with every transitive pin) in
# infra/requirements.txt, installed into a venv cached outside the repo, keyed by version:
# ${XDG_CACHE_HOME:-~/.cache}/gatehouse/infra-venv-cfn-lint-<v>-checkov-<v>/. A missing or
# half-done cache is (re)built (about 35 s with an empty pip cache; checkov is most of its
# ~420 MB). Nothing is fetched while checking: checkov runs with --skip-download.
#
# Prints one line per check and, last, `infra checks: N passed, M failed`; exits non-zero if any
# check failed. PYTHON overrides the interpreter for the venv (Python >= 3.9).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TEMPLATE=infra/template.json
REQUIREMENTS="$ROOT/infra/requirements.txt"
CACHE=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gatehouse
PYTHON=${PYTHON:-python3}

RUN_CARGO=1
for arg in "$@"; do
    case $arg in
        --no-cargo) RUN_CARGO=0 ;;
        *)
            echo "usage: tests/infra-checks.sh [--no-cargo]" >&2
            exit 2
            ;;
    esac
done

CFN_LINT_VERSION=$(sed -n 's/^cfn-lint==\(.*\)$/\1/p' "$REQUIREMENTS")
CHECKOV_VERSION=$(sed -n 's/^checkov==\(.*\)$/\1/p' "$REQUIREMENTS")
if [[ -z $CFN_LINT_VERSION || -z $CHECKOV_VERSION ]]; then
    echo "infra-checks: cannot read the cfn-lint and checkov pins from $REQUIREMENTS" >&2
    exit 1
fi
VENV="$CACHE/infra-venv-cfn-lint-$CFN_LINT_VERSION-checkov-$CHECKOV_VERSION"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-infra.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# A hash of the pin file, so a changed transitive pin rebuilds a cache of the same versions.
pin_hash() { sha256sum "$1" | cut -c1-16; }

with_lock() {
    local lock=$1
    shift
    if command -v flock >/dev/null; then
        (flock 9 && "$@") 9>"$lock"
    else
        "$@"
    fi
}

venv_ready() {
    [[ -f $VENV/.installed && $(cat "$VENV/.installed") == "$(pin_hash "$REQUIREMENTS")" ]] &&
        [[ -x $VENV/bin/cfn-lint && -x $VENV/bin/checkov ]]
}

install_venv() {
    venv_ready && return 0
    # A venv cannot be moved, so it is built in place; the stamp written last marks it complete.
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" >"$WORK/venv.log" 2>&1 || {
        tail -n 20 "$WORK/venv.log"
        return 1
    }
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input \
        -r "$REQUIREMENTS" >"$WORK/pip.log" 2>&1 || {
        tail -n 40 "$WORK/pip.log"
        rm -rf "$VENV"
        return 1
    }
    pin_hash "$REQUIREMENTS" >"$VENV/.installed"
}

setup() {
    if ! command -v "$PYTHON" >/dev/null; then
        echo "$PYTHON is needed (Python >= 3.9) for cfn-lint and checkov"
        return 1
    fi
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))'; then
        echo "$("$PYTHON" --version 2>&1) is too old: cfn-lint and checkov need Python >= 3.9"
        return 1
    fi
    venv_ready && return 0
    echo "installing cfn-lint $CFN_LINT_VERSION and checkov $CHECKOV_VERSION into $VENV"
    local start=$SECONDS
    mkdir -p "$CACHE"
    with_lock "$CACHE/infra-venv.lock" install_venv || return 1
    echo "installed in $((SECONDS - start)) s"
}

PASSED=0
FAILED=0
# check NAME SUMMARY_COMMAND -- COMMAND...: runs COMMAND with its output in a log; prints
# `infra check [NAME]: ok (<summary>, N s)` or FAILED with the output.
check() {
    local name=$1 summarize=$2
    shift 3
    local log="$WORK/$name.log" start=$SECONDS status=0
    "$@" >"$log" 2>&1 || status=$?
    local took=$((SECONDS - start))
    if ((status == 0)); then
        PASSED=$((PASSED + 1))
        echo "infra check [$name]: ok ($($summarize "$log")${took} s)"
    else
        FAILED=$((FAILED + 1))
        sed 's/^/    /' "$log"
        echo "infra check [$name]: FAILED (exit $status, ${took} s)"
    fi
}

no_summary() { :; }
checkov_summary() { grep -o 'Passed checks: [0-9]*, Failed checks: [0-9]*, Skipped checks: [0-9]*' "$1" | head -n 1 | sed 's/$/; /'; }
cargo_summary() { grep -o 'test result: ok\. [0-9]* passed' "$1" | tail -n 1 | sed 's/test result: ok\. //; s/$/; /'; }

run_cfn_lint() {
    # Any error, warning or informational finding makes the exit code non-zero.
    "$VENV/bin/cfn-lint" --format parseable -- "$TEMPLATE"
}

run_checkov() {
    "$VENV/bin/checkov" --file "$TEMPLATE" --framework cloudformation --compact \
        --skip-download
}

run_template_tests() {
    cargo test -p tests --locked --test it -- infra:: >"$WORK/cargo.out" 2>&1 || {
        cat "$WORK/cargo.out"
        return 1
    }
    cat "$WORK/cargo.out"
    # A filter that matches nothing passes quietly; it must not.
    grep -q 'test result: ok\. [1-9][0-9]* passed' "$WORK/cargo.out" || {
        echo "no template test ran (filter infra::)"
        return 1
    }
}

if setup_out=$(setup 2>&1); then
    [[ -n $setup_out ]] && echo "$setup_out"
    check cfn-lint no_summary -- run_cfn_lint
    check checkov checkov_summary -- run_checkov
else
    printf '%s\n' "$setup_out" | sed 's/^/    /'
    echo "infra check [cfn-lint]: FAILED (setup)"
    echo "infra check [checkov]: FAILED (setup)"
    FAILED=$((FAILED + 2))
fi
if ((RUN_CARGO)); then
    check template-tests cargo_summary -- run_template_tests
fi

echo "infra checks: $PASSED passed, $FAILED failed"
((FAILED == 0))
