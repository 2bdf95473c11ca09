#!/usr/bin/env bash
# Installs what the browser test needs and prints the environment for it:
# Debian's Chromium (apt) and playwright-core (npm, cached under ~/.cache/gatehouse).
# Usage: eval "$(tests/browser.sh)"
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=$(sed -n 's/.*"playwright-core": *"\([^"]*\)".*/\1/p' tests/browser/package.json)
CACHE=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gatehouse/playwright-core-$VERSION
if ! command -v chromium >/dev/null; then
    SUDO=""
    if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -q chromium >/dev/null 2>&1 \
        || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q chromium >/dev/null; } \
        || { echo "could not install Chromium with apt-get" >&2; exit 1; }
fi
if [ ! -f "$CACHE/node_modules/playwright-core/package.json" ]; then
    mkdir -p "$CACHE"
    cp tests/browser/package.json "$CACHE/package.json"
    npm install --prefix "$CACHE" --no-audit --no-fund --silent >/dev/null
fi
echo "export GATEHOUSE_TEST_BROWSER=1"
echo "export CHROMIUM=$(command -v chromium)"
echo "export PLAYWRIGHT_MODULES=$CACHE/node_modules"
