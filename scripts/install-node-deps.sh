#!/usr/bin/env bash
# Installs the npm packages of the Node election campaigner the tests start
# (tests/campaigners/node: `etcd3` for etcd elections, `redlock` on `ioredis` for Redis
# locks, pinned by its package-lock.json), only when one of them is missing. Quick and silent when it is there.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/tests/campaigners/node"

[[ -d $dir/node_modules/etcd3 && -d $dir/node_modules/redlock && -d $dir/node_modules/ioredis ]] && exit 0

log() { printf 'install-node-deps: %s\n' "$*" >&2; }

if ! command -v npm >/dev/null 2>&1; then
  log "npm is missing; installing nodejs and npm from apt"
  "$root/scripts/install-deps.sh" nodejs npm
fi

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
# npm ci installs exactly what the lockfile says, and nothing when it fails.
if ! (cd "$dir" && npm ci --no-audit --no-fund >"$out" 2>&1); then
  cat "$out" >&2
  log "npm ci failed in $dir"
  exit 1
fi
echo "installed etcd3, redlock and ioredis (npm) for tests/campaigners/node"
