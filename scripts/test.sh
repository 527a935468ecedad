#!/usr/bin/env bash
# Full local/CI check: system deps, formatting, lints, then every test target.
# The integration tests start their own throwaway etcd servers.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

step() { printf '==> %s\n' "$*"; }

step "scripts/install-deps.sh"
scripts/install-deps.sh

step "scripts/install-node-deps.sh"
scripts/install-node-deps.sh

step "cargo fmt --all -- --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

step "cargo test --all-targets"
cargo test --all-targets

step "all checks passed"
