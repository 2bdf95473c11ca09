#!/usr/bin/env bash
# Warm latency at the edge (issue 47): the release Worker served in workerd by `tests/edge.sh
# start` (the deployment-like instance: admin token, every variable set), loaded by one
# sequential keep-alive `loadgen` client: an authenticated read through every gate
# (`get_server_status`), an authenticated `tools/list`, and a 401 (a credential that is no MCP
# token; no store access). The calls rotate over 16 connections in 4 workspaces
# (`--rotate-tokens`), so that 1,000 calls in a few seconds stay under the default rate limits
# (120 reads a minute a connection, 600 a workspace) and every answer is a tool's result.
#
#   tests/bench/edge.sh [--calls N]      (default 1000, after a 2 s warm-up)
#
# Needs what tests/edge.sh needs (it builds the Worker, or reuses its build when nothing
# changed). Local figures, not Cloudflare's network.
set -euo pipefail
cd "$(dirname "$0")/../.."
CALLS=1000
while [ $# -gt 0 ]; do
    case $1 in
        --calls) CALLS=$2; shift 2 ;;
        *) echo "usage: tests/bench/edge.sh [--calls N]" >&2; exit 2 ;;
    esac
done
cargo build -q --locked -p gatehouse -p loadgen --release
EDGE_ENV=$(tests/edge.sh start)
eval "$EDGE_ENV"
trap 'kill "$GATEHOUSE_EDGE_PID" 2>/dev/null || true' EXIT
export GATEHOUSE_EDGE_URL=$GATEHOUSE_TEST_EDGE_DEPLOYED_URL
export GATEHOUSE_EDGE_ADMIN_TOKEN=$GATEHOUSE_TEST_EDGE_ADMIN_TOKEN
G=target/release/gatehouse
TOKENS=$(mktemp)
for w in 1 2 3 4; do
    $G tenant create "bench-$w" --name "Bench $w" --zone Europe/Berlin --currency EUR \
        --tax-rate 19 >/dev/null
    $G member set --tenant "bench-$w" --member ana --role owner >/dev/null
    for c in 1 2 3 4; do
        $G token create --tenant "bench-$w" --member ana --client "bench $c" --json |
            sed -n 's/.*"token":"\([^"]*\)".*/\1/p' >>"$TOKENS"
    done
done
run() {
    target/release/loadgen --url "$GATEHOUSE_EDGE_URL/mcp" --clients 1 --warmup 2 \
        --duration 60 --max-calls "$CALLS" "$@" | tail -1
}
run --token-file "$TOKENS" --rotate-tokens --label "edge read (every gate)"
run --token-file "$TOKENS" --rotate-tokens --method tools/list --label "edge tools/list"
run --token not-an-mcp-token --expect-status 401 --expect invalid_token --label "edge 401"
rm -f "$TOKENS"
