#!/usr/bin/env bash
# Every benchmark of the performance issue, one after another (not part of tests/run or CI):
#
#   tests/bench/run.sh [--quick] [PART...]
#
# PARTs, in this order by default (each also runs alone, e.g. tests/bench/load.sh):
#   pipeline       tests/bench/pipeline.sh: criterion, median time per tools/list, read and
#                  silent write through the real app on MemoryStore
#   load           tests/bench/load.sh: gatehouse serve on SQLite, reads and writes at 1/16/64
#                  clients (60 s each; --quick 5 s)
#   peers          tests/bench/peers.sh: gatehouse vs rmcp, Python and TypeScript SDKs on the same
#                  1 KB read tool (30 s each; --quick 5 s)
#   footprint      tests/bench/footprint.sh: binary size, cold start, RSS over 100,000 calls
#                  (--quick 20,000)
#   multi-process  tests/bench/multi-process.sh: 3 serve processes on one DynamoDB table (moto)
#
# Figures depend on what else runs on the machine: run it on an otherwise idle machine. Results
# are printed and kept in target/bench/.
set -euo pipefail
cd "$(dirname "$0")/../.."
QUICK=()
PARTS=()
for arg in "$@"; do
    case $arg in
        --quick) QUICK=(--quick) ;;
        pipeline | load | peers | footprint | multi-process) PARTS+=("$arg") ;;
        *) echo "usage: $0 [--quick] [pipeline|load|peers|footprint|multi-process]..." >&2; exit 2 ;;
    esac
done
[[ ${#PARTS[@]} -gt 0 ]] || PARTS=(pipeline load peers footprint multi-process)
# shellcheck source=tests/bench/lib.sh
source tests/bench/lib.sh
trap - EXIT
echo "machine: $(bench_machine)"
cargo build --release --locked -p gatehouse -p loadgen --features gatehouse/bench
export GATEHOUSE_BIN=$GATEHOUSE LOADGEN_BIN=$LOADGEN
failed=()
for part in "${PARTS[@]}"; do
    printf '\n######## %s\n' "$part"
    "tests/bench/$part.sh" ${QUICK[@]+"${QUICK[@]}"} || failed+=("$part")
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "bench: failed: ${failed[*]}" >&2
    exit 1
fi
echo "bench: every part ran; results in $BENCH_OUT"
