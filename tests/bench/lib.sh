# Shared helpers for the benchmark scripts (sourced, not run). See tests/bench/run.sh.
# shellcheck shell=bash disable=SC2034  # the variables are for the scripts that source this

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$BENCH_ROOT/target}
GATEHOUSE=${GATEHOUSE_BIN:-$TARGET/release/gatehouse}
LOADGEN=${LOADGEN_BIN:-$TARGET/release/loadgen}
BENCH_OUT=${BENCH_OUT:-$TARGET/bench}
BENCH_CACHE=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gatehouse/bench
# Rate limits for benchmark servers: every limit times this (numbers only; every gate stays on).
BENCH_SCALE=${BENCH_SCALE:-100000}
mkdir -p "$BENCH_OUT"

bench_step() { printf '\n==> %s\n' "$*" >&2; }

# Builds the release gatehouse and loadgen binaries (once per script run).
bench_build() {
    if [[ -z ${GATEHOUSE_BIN:-} || -z ${LOADGEN_BIN:-} ]]; then
        (cd "$BENCH_ROOT" && cargo build --release --locked -p gatehouse -p loadgen --features gatehouse/bench >&2)
    fi
}

bench_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# PIDs to stop on exit.
BENCH_PIDS=()
bench_cleanup() {
    local pid
    for pid in "${BENCH_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${BENCH_PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    BENCH_PIDS=()
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# Waits until an HTTP server answers on 127.0.0.1:$1 (any status), or fails after ~30 s.
bench_wait_port() {
    local port=$1 pid=${2:-}
    for _ in $(seq 1 300); do
        if curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; then return 0; fi
        if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
            echo "bench: the server (pid $pid) exited" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "bench: nothing answers on port $port" >&2
    return 1
}

# bench_serve DATA_DIR PORT [serve flags...]: starts `gatehouse serve` (raised limits, the bench
# tool), waits until it answers; sets SERVE_PID. Global store flags may come from
# GATEHOUSE_TABLE/GATEHOUSE_DYNAMODB_ENDPOINT in the environment.
bench_serve() {
    local dir=$1 port=$2
    shift 2
    mkdir -p "$dir"
    # BENCH_WRAP: a command to run the server under (peers.sh pins it to a core with taskset).
    GATEHOUSE_LOG=${GATEHOUSE_LOG:-warn} ${BENCH_WRAP[@]+"${BENCH_WRAP[@]}"} "$GATEHOUSE" --data-dir "$dir" serve --addr "127.0.0.1:$port" \
        --rate-limit-scale "$BENCH_SCALE" --bench-tool "$@" >"$dir/serve-$port.log" 2>&1 &
    SERVE_PID=$!
    BENCH_PIDS+=("$SERVE_PID")
    bench_wait_port "$port" "$SERVE_PID" || { cat "$dir/serve-$port.log" >&2; return 1; }
}

# bench_seed DATA_DIR: starts `gatehouse serve` once on an empty store so that it seeds the demo
# tenants, and stops it. Seeding hashes the demo members' passwords (Argon2, ~19 MiB each), which
# would otherwise dominate the measured server's peak RSS.
bench_seed() {
    local port
    port=$(bench_free_port)
    bench_serve "$1" "$port"
    bench_cleanup
}

# bench_tokens DATA_DIR N TENANT FILE [MEMBER [token create flags...]]: creates N connections
# (one per load client; the server admits at most two concurrent calls per connection) for
# TENANT's MEMBER (default dana, a dispatcher), tokens in FILE.
bench_tokens() {
    local dir=$1 n=$2 tenant=$3 file=$4 member=${5:-dana} i
    shift $(($# < 5 ? $# : 5))
    : >"$file"
    for i in $(seq 1 "$n"); do
        "$GATEHOUSE" --data-dir "$dir" token create --tenant "$tenant" --member "$member" \
            --client "loadgen $i" --json "$@" |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' >>"$file"
    done
}

# Sets SERVER_CPU and LOAD_CPU: the server on core 0, the load generator on core 1 (when there
# are two), so that neither takes the other's CPU.
bench_pinning() {
    SERVER_CPU=() LOAD_CPU=()
    if [[ $(nproc) -ge 2 ]] && command -v taskset >/dev/null; then
        SERVER_CPU=(taskset -c 0) LOAD_CPU=(taskset -c 1)
    fi
}

# CPU time (clock ticks, utime + stime) a process has used.
bench_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# bench_cpu_us_per_call RESULT START_TICKS END_TICKS: a server's CPU per call in µs over the
# window of RESULT (a `loadgen` JSON line), from its CPU ticks at the window's start and end.
bench_cpu_us_per_call() {
    python3 -c '
import json, os, sys
calls = json.loads(sys.argv[1])["calls"]
ticks = int(sys.argv[3]) - int(sys.argv[2])
print(round(ticks / os.sysconf("SC_CLK_TCK") * 1e6 / max(calls, 1), 1))' "$@"
}

# Peak resident memory (VmHWM, kB) of a process.
bench_hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

bench_machine() {
    local cpu mem
    cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
    mem=$(awk '/^MemTotal:/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)
    printf '%s cores, %s, %s RAM, %s; other rustc processes now: %s\n' \
        "$(nproc)" "$cpu" "$mem" "$(date -u +%Y-%m-%dT%H:%MZ)" "$(pgrep -c rustc || true)"
}
