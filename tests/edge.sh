#!/usr/bin/env bash
# The edge build and its local runtime (ADR 20).
#
#   tests/edge.sh build    builds functions/mcp-worker for wasm32 with worker-build: the
#                          release build into functions/mcp-worker/build/ (what wrangler
#                          deploys) and the test build (--features test-routes) into
#                          build-test/, and the helpdesk's Worker (examples/helpdesk-worker,
#                          a second product, ADR 49) into its build/, prints their sizes and fails when one is past the free plan's 3 MiB gzipped upload
#   tests/edge.sh dry-run  builds, then checks wrangler.toml with `wrangler deploy --dry-run`
#                          (no account needed: nothing is uploaded)
#   tests/edge.sh start    builds, dry-runs, then serves it in workerd (Durable Objects with
#                          SQLite on a temporary disk) eight times, on free ports: the test build;
#                          the release build configured as a deployment (admin token, every
#                          test variable set); the test build with OAuth keys fetched from an
#                          issuer that stalls for a minute; the release build with settings
#                          that are wrong; the release build with a low ceiling of admin
#                          calls; the helpdesk's release build with an admin token; the test
#                          build on objects no other test uses (counted in its storage); and
#                          the release build on objects of its own whose switch a test flips;
#                          prints, for `eval`, GATEHOUSE_TEST_EDGE_URL,
#                          GATEHOUSE_TEST_EDGE_DEPLOYED_URL, GATEHOUSE_TEST_EDGE_STALLED_KEYS_URL,
#                          GATEHOUSE_TEST_EDGE_MISCONFIGURED_URL, GATEHOUSE_TEST_EDGE_CEILING_URL,
#                          GATEHOUSE_TEST_EDGE_LOG, GATEHOUSE_TEST_EDGE_ADMIN_TOKEN,
#                          GATEHOUSE_TEST_EDGE_ADMIN_CALLS_PER_MINUTE,
#                          GATEHOUSE_TEST_EDGE_HELPDESK_URL, GATEHOUSE_TEST_EDGE_SCALE_URL,
#                          GATEHOUSE_TEST_EDGE_SCALE_STORAGE, GATEHOUSE_TEST_EDGE_SWITCH_URL,
#                          GATEHOUSE_TEST_EDGE_OUTBOX_URL, GATEHOUSE_TEST_EDGE_WEBHOOK_PORT,
#                          GATEHOUSE_TEST_EDGE_WEBHOOK_SECRET, GATEHOUSE_TEST_EDGE_PAGES_URL
#                          and GATEHOUSE_EDGE_PID
#
# The toolchain comes from crates.io and npm only, cached outside the clone and keyed by
# version (nothing depends on the cache being there):
#   ${XDG_CACHE_HOME:-~/.cache}/gatehouse/wasm-bindgen-cli-<v>   cargo install (the version
#                                                                 Cargo.lock has)
#   .../worker-build-<v>                                          cargo install
#   .../edge-npm-wrangler-<v>                                     npm install (wrangler, with
#                                                                 its workerd and esbuild)
# worker-build would download wasm-bindgen and esbuild from GitHub; it is pointed at these
# instead (WASM_BINDGEN_BIN, ESBUILD_BIN), and wasm-opt is off (Cargo.toml metadata).
# Messages go to stderr; stdout carries only the `eval` lines.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gatehouse
WORKER_BUILD_VERSION=0.8.7
# wrangler brings the workerd and esbuild it was released with. 4.86 is the last that runs on
# Node.js 20 (the machine's); later ones need 22.
WRANGLER_VERSION=4.86.0
WASM_BINDGEN_VERSION=$(sed -n '/^name = "wasm-bindgen"$/{n;s/^version = "\(.*\)"$/\1/p;}' Cargo.lock)
CRATE=functions/mcp-worker
OUT=$ROOT/$CRATE/build
OUT_TEST=$ROOT/$CRATE/build-test
# A second product's Worker, written as a team writes its own (ADR 49).
HELPDESK_CRATE=examples/helpdesk-worker
OUT_HELPDESK=$ROOT/$HELPDESK_CRATE/build
RUN_DIR=$ROOT/target/edge

say() { echo "edge: $*" >&2; }

with_lock() {
    local lock=$1
    shift
    mkdir -p "$(dirname "$lock")"
    if command -v flock >/dev/null; then
        (flock 9 && "$@") 9>"$lock"
    else
        "$@"
    fi
}

# cargo install NAME VERSION into $CACHE/NAME-VERSION unless there.
cargo_tool() {
    local name=$1 version=$2 bin=$3
    local dir="$CACHE/$name-$version"
    if [[ -x $dir/bin/$bin ]]; then return 0; fi
    say "installing $name $version from crates.io into $dir (a few minutes, once)"
    CARGO_TARGET_DIR="$CACHE/cargo-install-target" cargo install --quiet "$name" \
        --version "=$version" --root "$dir" >&2
    rm -rf "$CACHE/cargo-install-target"
}

npm_tools() {
    local dir=$1
    local bins=$dir/node_modules/.bin
    if [[ -x $bins/workerd && -x $bins/esbuild && -x $bins/wrangler ]]; then return 0; fi
    if ! command -v npm >/dev/null; then
        say "npm is needed for wrangler, workerd and esbuild (Node.js 20 or later)"
        exit 1
    fi
    say "installing wrangler $WRANGLER_VERSION (with workerd and esbuild) from npm into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$dir" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error \
        "wrangler@$WRANGLER_VERSION" >&2)
}

install_tools() {
    if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
        say "installing the wasm32-unknown-unknown target"
        rustup target add wasm32-unknown-unknown >&2
    fi
    with_lock "$CACHE/edge-tools.lock" cargo_tool wasm-bindgen-cli "$WASM_BINDGEN_VERSION" wasm-bindgen
    with_lock "$CACHE/edge-tools.lock" cargo_tool worker-build "$WORKER_BUILD_VERSION" worker-build
    NPM_DIR="$CACHE/edge-npm-wrangler-$WRANGLER_VERSION"
    with_lock "$CACHE/edge-tools.lock" npm_tools "$NPM_DIR"
}

# build_one OUT_DIR [CARGO FLAGS...]: worker-build --release into $CRATE/OUT_DIR.
build_one() {
    build_crate "$CRATE" "$@"
}

# build_crate CRATE OUT_DIR [CARGO FLAGS...]: worker-build --release into CRATE/OUT_DIR.
build_crate() {
    local crate=$1 out=$2
    shift 2
    local started=$SECONDS
    (cd "$crate" && WASM_BINDGEN_BIN="$CACHE/wasm-bindgen-cli-$WASM_BINDGEN_VERSION/bin/wasm-bindgen" \
        ESBUILD_BIN="$NPM_DIR/node_modules/.bin/esbuild" \
        "$CACHE/worker-build-$WORKER_BUILD_VERSION/bin/worker-build" --release --out-dir "$out" . "$@" >&2)
    local wasm gzipped
    wasm=$(find "$ROOT/$crate/$out" -name '*.wasm' | head -1)
    gzipped=$(gzip -c "$wasm" | wc -c)
    say "built $out in $((SECONDS - started)) s: $(basename "$wasm") is $(stat -c %s "$wasm") bytes ($gzipped gzipped)"
    # Cloudflare's free plan uploads at most 3 MiB gzipped; the wasm is nearly all of an upload
    # (the JavaScript shim is a few KiB), so a build past it fails here, not at deploy time.
    if [ "$gzipped" -gt $((3 * 1024 * 1024)) ]; then
        say "$crate/$out: the wasm is $gzipped bytes gzipped, past the free plan's 3 MiB upload"
        exit 1
    fi
}

# Two builds (ADR 48): the release build (build/, what `wrangler deploy` uploads: no test
# route, whatever its variables) and the test build (build-test/, with the `test-routes`
# feature: the admin route open to the tests, each test's store object named by a header).
build() {
    install_tools
    say "building $CRATE for wasm32 (worker-build --release): the release build"
    build_one build
    say "building $CRATE for wasm32 with --features test-routes: the test build"
    build_one build-test --features test-routes
    say "building $HELPDESK_CRATE for wasm32: the helpdesk's release build"
    build_crate "$HELPDESK_CRATE" build
}

dry_run() {
    say "wrangler deploy --dry-run ($CRATE/wrangler.toml)"
    (cd "$CRATE" && WRANGLER_SEND_METRICS=false "$NPM_DIR/node_modules/.bin/wrangler" deploy \
        --dry-run --outdir "$RUN_DIR-dry-run" >&2)
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The workerd configuration: the built modules, the store's Durable Object class with SQLite,
# its storage on a disk folder, and the test settings.
ADMIN_TOKEN=edge-test-admin-token-0123456789abcdef0123456789
WEBHOOK_SECRET=edge-test-webhook-secret-0123456789abcdef012345
# The ceiling worker's admin calls per minute (tests/it/edge.rs floods past it).
ADMIN_CALLS_PER_MINUTE=400

# worker NAME OBJECT_KEY MODULES BINDINGS [FIELD]: one worker of the configuration: the built
# modules, the store's Durable Object class with SQLite on the shared disk, its own settings,
# and any further field of the worker.
# MODULES is the list of one build's modules ($release_modules or $test_modules); the
# worker's index.js is the same build's (its folder is the list's).
worker() {
    local dir
    dir=$(sed -n 's/.*embed "\([^/]*\)\/.*/\1/p' <<<"$3" | head -1)
    cat <<EOF
const $1 :Workerd.Worker = (
  modules = [
    (name = "index.js", esModule = embed "$dir/index.js"),
$3
  ],
  compatibilityDate = "2025-09-01",
  bindings = [
    (name = "STORE", durableObjectNamespace = "StoreObject"),
    $4
  ],
  durableObjectNamespaces = [
    (className = "StoreObject", uniqueKey = "$2", enableSql = true),
  ],
  durableObjectStorage = (localDisk = "do-storage"),${5:+
  $5}
);
EOF
}

# copy_modules BUILD DIR: copies a build into $RUN_DIR/DIR and prints its modules (all but
# index.js) as capnp list entries.
copy_modules() {
    local build=$1 dir=$2 f
    mkdir -p "$RUN_DIR/$dir"
    cp -r "$build"/. "$RUN_DIR/$dir/"
    for f in $(cd "$RUN_DIR/$dir" && find . -type f \( -name '*.js' -o -name '*.mjs' -o -name '*.wasm' \) | sed 's|^\./||' | sort); do
        case $f in
            *.wasm) echo "    (name = \"$f\", wasm = embed \"$dir/$f\")," ;;
            index.js) ;;
            *) echo "    (name = \"$f\", esModule = embed \"$dir/$f\")," ;;
        esac
    done
}

write_config() {
    local port=$1 deployed_port=$2 stalled_port=$3 misconfigured_port=$4 ceiling_port=$5
    local helpdesk_port=$6 scale_port=$7 switch_port=$8 outbox_port=$9 webhook_port=${10}
    local pages_port=${11}
    # The test issuer's keys (tests/fixtures/oauth), as a capnp text literal.
    local jwks
    jwks=$(tr -d '\n' <tests/fixtures/oauth/jwks.json | sed 's/\\/\\\\/g; s/"/\\"/g')
    rm -rf "$RUN_DIR" && mkdir -p "$RUN_DIR/do-storage"
    local release_modules test_modules
    release_modules=$(copy_modules "$OUT" worker)
    test_modules=$(copy_modules "$OUT_TEST" worker-test)
    local helpdesk_modules
    helpdesk_modules=$(copy_modules "$OUT_HELPDESK" worker-helpdesk)
    cat >"$RUN_DIR/config.capnp" <<EOF
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .gatehouse),
    (name = "deployed", worker = .deployed),
    (name = "stalled-keys", worker = .stalledKeys),
    (name = "stalled-issuer", worker = .stalledIssuer),
    (name = "misconfigured", worker = .misconfigured),
    (name = "ceiling", worker = .ceiling),
    (name = "helpdesk", worker = .helpdesk),
    (name = "scale", worker = .scale),
    (name = "switch", worker = .switch),
    (name = "outbox", worker = .outbox),
    (name = "pages", worker = .pages),
    (name = "loopback", network = (allow = ["local"])),
    (name = "do-storage", disk = (path = "$RUN_DIR/do-storage", writable = true)),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:$port", http = (), service = "main"),
    (name = "deployed", address = "127.0.0.1:$deployed_port", http = (), service = "deployed"),
    (name = "stalled-keys", address = "127.0.0.1:$stalled_port", http = (), service = "stalled-keys"),
    (name = "misconfigured", address = "127.0.0.1:$misconfigured_port", http = (), service = "misconfigured"),
    (name = "ceiling", address = "127.0.0.1:$ceiling_port", http = (), service = "ceiling"),
    (name = "helpdesk", address = "127.0.0.1:$helpdesk_port", http = (), service = "helpdesk"),
    (name = "scale", address = "127.0.0.1:$scale_port", http = (), service = "scale"),
    (name = "switch", address = "127.0.0.1:$switch_port", http = (), service = "switch"),
    (name = "outbox", address = "127.0.0.1:$outbox_port", http = (), service = "outbox"),
    (name = "pages", address = "127.0.0.1:$pages_port", http = (), service = "pages"),
  ],
);

# An issuer that takes a minute to answer: every outbound request of the stalled-keys worker
# goes to it (its globalOutbound), so its key fetches end only at their own deadline.
const stalledIssuer :Workerd.Worker = (
  modules = [
    (name = "issuer.js", esModule = "export default { async fetch() { await new Promise((done) => setTimeout(done, 60000)); return new Response('{}'); } };"),
  ],
  compatibilityDate = "2025-09-01",
);

# The test build, for the contract tests: each test on a store object of its own.
$(worker gatehouse gatehouse-store "$test_modules" \
    "(name = \"GATEHOUSE_STATE_KEY\", text = \"edge-test-state-key-0123456789abcdef0123456789\"),
    (name = \"GATEHOUSE_CONSOLE_BASE\", text = \"https://pages.example.com/app\"),
    (name = \"GATEHOUSE_OAUTH_ISSUER\", text = \"https://auth.example.com\"),
    (name = \"GATEHOUSE_OAUTH_RESOURCE\", text = \"https://mcp.example.com/mcp\"),
    (name = \"GATEHOUSE_OAUTH_JWKS\", text = \"$jwks\"),")

# The test build on objects of its own, for the one test that counts the objects a deployment
# makes in workerd's storage (tests/it/edge.rs): no other test uses it.
$(worker scale gatehouse-store-scale "$test_modules" \
    "(name = \"GATEHOUSE_STATE_KEY\", text = \"edge-scale-state-key-0123456789abcdef0123456789\"),
    (name = \"GATEHOUSE_CONSOLE_BASE\", text = \"https://pages.example.com/app\"),")

# The release build as a deployment, on objects of its own, for the one test that flips its
# global kill switch with the CLI (no other test's calls are stopped by it).
$(worker switch gatehouse-store-switch "$release_modules" \
    "(name = \"GATEHOUSE_STATE_KEY\", text = \"edge-switch-state-key-0123456789abcdef012345678\"),
    (name = \"GATEHOUSE_CONSOLE_BASE\", text = \"https://pages.example.com/app\"),
    (name = \"GATEHOUSE_ADMIN_TOKEN\", text = \"$ADMIN_TOKEN\"),")

# The test build delivering its outbox to a webhook receiver the test starts on this machine
# (its outbound requests may reach loopback addresses), retrying a second apart; no other
# test uses it (tests/it/edge_scale.rs).
$(worker outbox gatehouse-store-outbox "$test_modules" \
    "(name = \"GATEHOUSE_STATE_KEY\", text = \"edge-outbox-state-key-0123456789abcdef01234567\"),
    (name = \"GATEHOUSE_CONSOLE_BASE\", text = \"https://pages.example.com/app\"),
    (name = \"GATEHOUSE_WEBHOOK_URL\", text = \"http://127.0.0.1:$webhook_port/hooks/gatehouse\"),
    (name = \"GATEHOUSE_WEBHOOK_SECRET\", text = \"$WEBHOOK_SECRET\"),
    (name = \"GATEHOUSE_TEST_OUTBOX_RETRY_SECONDS\", text = \"1\")," \
    'globalOutbound = "loopback",')

# The test build serving the product's pages at its own loopback address, its public URL, on
# objects of its own that the browser test reaches without a prefix (tests/it/browser.rs).
$(worker pages gatehouse-store-pages "$test_modules" \
    "(name = \"GATEHOUSE_STATE_KEY\", text = \"edge-pages-state-key-0123456789abcdef012345678\"),
    (name = \"GATEHOUSE_CONSOLE_BASE\", text = \"http://127.0.0.1:$pages_port/app\"),")

# OAuth with keys fetched from the issuer's URL, which stalls (tests/it/edge.rs).
$(worker stalledKeys gatehouse-store-stalled-keys "$test_modules" \
    "(name = \"GATEHOUSE_STATE_KEY\", text = \"edge-stalled-state-key-0123456789abcdef01234567\"),
    (name = \"GATEHOUSE_CONSOLE_BASE\", text = \"https://pages.example.com/app\"),
    (name = \"GATEHOUSE_OAUTH_ISSUER\", text = \"https://auth.example.com\"),
    (name = \"GATEHOUSE_OAUTH_RESOURCE\", text = \"https://mcp.example.com/mcp\"),
    (name = \"GATEHOUSE_OAUTH_JWKS_URL\", text = \"https://auth.example.com/jwks.json\")," \
    'globalOutbound = "stalled-issuer",')

# The release build with settings that are wrong: a short sealing key, an origin with a path,
# a body limit in words, no public URL, a webhook over plain HTTP (tests/it/edge.rs: /healthz
# and every call answer only "misconfigured", the log names the problems).
$(worker misconfigured gatehouse-store-misconfigured "$release_modules" \
    "(name = \"GATEHOUSE_STATE_KEY\", text = \"short-key\"),
    (name = \"GATEHOUSE_ALLOWED_ORIGINS\", text = \"https://app.example.com/\"),
    (name = \"GATEHOUSE_MAX_BODY_BYTES\", text = \"1MB\"),
    (name = \"GATEHOUSE_WEBHOOK_URL\", text = \"http://hooks.example.com/gatehouse\"),")

# The release build as a deployment is configured: the admin route behind the admin token,
# with every test variable a build ever read set (it opens nothing).
$(worker deployed gatehouse-store-deployed "$release_modules" \
    "(name = \"GATEHOUSE_STATE_KEY\", text = \"edge-deployed-state-key-0123456789abcdef012345\"),
    (name = \"GATEHOUSE_CONSOLE_BASE\", text = \"https://pages.example.com/app\"),
    (name = \"GATEHOUSE_ADMIN_TOKEN\", text = \"$ADMIN_TOKEN\"),
    (name = \"GATEHOUSE_TEST_ROUTES\", text = \"1\"),
    (name = \"GATEHOUSE_TEST_PANIC_TOOL\", text = \"1\"),
    (name = \"GATEHOUSE_TEST_OUTBOX_RETRY_SECONDS\", text = \"1\"),")

# The same with a low ceiling of admin calls per minute, on objects of its own, for the test
# that floods past it without holding the deployed worker's administration up.
$(worker ceiling gatehouse-store-ceiling "$release_modules" \
    "(name = \"GATEHOUSE_STATE_KEY\", text = \"edge-ceiling-state-key-0123456789abcdef0123456\"),
    (name = \"GATEHOUSE_CONSOLE_BASE\", text = \"https://pages.example.com/app\"),
    (name = \"GATEHOUSE_ADMIN_TOKEN\", text = \"$ADMIN_TOKEN\"),
    (name = \"GATEHOUSE_ADMIN_CALLS_PER_MINUTE\", text = \"$ADMIN_CALLS_PER_MINUTE\"),")

# The helpdesk's release build as a team deploys it: its own store, the admin route behind the
# admin token (the tests administer it with the helpdesk's own command line).
$(worker helpdesk helpdesk-store "$helpdesk_modules" \
    "(name = \"GATEHOUSE_STATE_KEY\", text = \"edge-helpdesk-state-key-0123456789abcdef0123456\"),
    (name = \"GATEHOUSE_CONSOLE_BASE\", text = \"https://pages.example.com/app\"),
    (name = \"GATEHOUSE_ADMIN_TOKEN\", text = \"$ADMIN_TOKEN\"),")
EOF
}

start() {
    build
    dry_run
    local port deployed_port stalled_port misconfigured_port ceiling_port helpdesk_port scale_port
    local switch_port outbox_port webhook_port pages_port
    port=$(free_port)
    scale_port=$(free_port)
    switch_port=$(free_port)
    outbox_port=$(free_port)
    webhook_port=$(free_port)
    pages_port=$(free_port)
    helpdesk_port=$(free_port)
    ceiling_port=$(free_port)
    deployed_port=$(free_port)
    stalled_port=$(free_port)
    misconfigured_port=$(free_port)
    write_config "$port" "$deployed_port" "$stalled_port" "$misconfigured_port" "$ceiling_port" \
        "$helpdesk_port" "$scale_port" "$switch_port" "$outbox_port" "$webhook_port" \
        "$pages_port"
    local started=$SECONDS
    "$NPM_DIR/node_modules/.bin/workerd" serve "$RUN_DIR/config.capnp" \
        >"$RUN_DIR/workerd.log" 2>&1 &
    local pid=$!
    for _ in $(seq 1 200); do
        if curl -fs -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null; then
            say "workerd $("$NPM_DIR/node_modules/.bin/workerd" --version 2>/dev/null) serving the worker at http://127.0.0.1:$port (ready in $((SECONDS - started)) s; log: $RUN_DIR/workerd.log)"
            echo "export GATEHOUSE_TEST_EDGE_URL=http://127.0.0.1:$port"
            echo "export GATEHOUSE_TEST_EDGE_DEPLOYED_URL=http://127.0.0.1:$deployed_port"
            echo "export GATEHOUSE_TEST_EDGE_STALLED_KEYS_URL=http://127.0.0.1:$stalled_port"
            echo "export GATEHOUSE_TEST_EDGE_MISCONFIGURED_URL=http://127.0.0.1:$misconfigured_port"
            echo "export GATEHOUSE_TEST_EDGE_LOG=$RUN_DIR/workerd.log"
            echo "export GATEHOUSE_TEST_EDGE_ADMIN_TOKEN=$ADMIN_TOKEN"
            echo "export GATEHOUSE_TEST_EDGE_CEILING_URL=http://127.0.0.1:$ceiling_port"
            echo "export GATEHOUSE_TEST_EDGE_ADMIN_CALLS_PER_MINUTE=$ADMIN_CALLS_PER_MINUTE"
            echo "export GATEHOUSE_TEST_EDGE_HELPDESK_URL=http://127.0.0.1:$helpdesk_port"
            echo "export GATEHOUSE_TEST_EDGE_SCALE_URL=http://127.0.0.1:$scale_port"
            echo "export GATEHOUSE_TEST_EDGE_SCALE_STORAGE=$RUN_DIR/do-storage/gatehouse-store-scale"
            echo "export GATEHOUSE_TEST_EDGE_SWITCH_URL=http://127.0.0.1:$switch_port"
            echo "export GATEHOUSE_TEST_EDGE_OUTBOX_URL=http://127.0.0.1:$outbox_port"
            echo "export GATEHOUSE_TEST_EDGE_WEBHOOK_PORT=$webhook_port"
            echo "export GATEHOUSE_TEST_EDGE_WEBHOOK_SECRET=$WEBHOOK_SECRET"
            echo "export GATEHOUSE_TEST_EDGE_PAGES_URL=http://127.0.0.1:$pages_port"
            echo "export GATEHOUSE_EDGE_PID=$pid"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            cat "$RUN_DIR/workerd.log" >&2
            say "workerd failed to start"
            exit 1
        fi
        sleep 0.1
    done
    cat "$RUN_DIR/workerd.log" >&2
    say "workerd did not answer /healthz in 20 s"
    kill "$pid" 2>/dev/null || true
    exit 1
}

case ${1:-} in
    build) build ;;
    dry-run) build && dry_run ;;
    start) start ;;
    *)
        echo "usage: tests/edge.sh build|dry-run|start" >&2
        exit 2
        ;;
esac
