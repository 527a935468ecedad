#!/usr/bin/env bash
# The whole check, as CI runs it: system packages, formatting, lints, then every test target.
# The integration tests start their own throwaway servers (etcd, PostgreSQL, MariaDB,
# ZooKeeper, Redis, Prometheus, kube-apiserver) on free loopback ports.
#
# Each run gets a new HOME, XDG dirs and TMPDIR under one run directory, so no test reads
# what an earlier run or the user left behind. Every process the tests start inherits
# ELECTOP_TEST_RUN; at the end any still running is named, stopped, and fails the run.
# The last line is the summary: tests passed, failed and skipped, and the wall time; a
# failing run prints, before it, each failed test and where its logs were kept.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
started="$(date +%s)"

step() { printf '==> %s\n' "$*"; }

step "scripts/install-deps.sh"
scripts/install-deps.sh

step "scripts/install-node-deps.sh"
scripts/install-node-deps.sh

step "scripts/build-kube.sh"
scripts/build-kube.sh

step "scripts/install-etcd35.sh"
scripts/install-etcd35.sh
etcd35="${ELECTOP_ETCD35_DIR:-/var/lib/electop-etcd35}/bin"

# The toolchain stays where it is; everything else a test could write to is the run's own.
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"

step "cargo fmt --all -- --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

# Made only now: a run that stops at fmt or clippy leaves nothing in /tmp.
# Short, under /tmp: servers put unix sockets in their data dirs (a path's limit is 107 bytes).
run="$(mktemp -d /tmp/electop-test.XXXXXX)"
export ELECTOP_TEST_RUN="${run##*/}"
export ELECTOP_TEST_KEPT="$run/kept.txt"
mkdir -p "$run/home" "$run/tmp"
# Servers that run as their own user (PostgreSQL as postgres) need to reach their data dirs.
chmod 755 "$run" "$run/tmp"
export HOME="$run/home" TMPDIR="$run/tmp"
export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share"
export XDG_STATE_HOME="$HOME/.local/state" XDG_CACHE_HOME="$HOME/.cache"
unset XDG_RUNTIME_DIR
export TMUX_TMPDIR="$run"
tests_log="$run/cargo-test.log"

status=0
step "cargo test --all-targets --no-run"
report() {
  exec /usr/bin/python3 "$root/scripts/test-report.py" \
    --log "$tests_log" --run "$run" --status "$status" --started "$started"
}
cargo test --all-targets --no-run 2>&1 | tee "$tests_log" || status=$?
# Nothing to run when a target does not build: the report says which.
[ "$status" = 0 ] || report

# The conformance suite (tests/conformance, about 7 minutes, most of it waiting on servers
# and timeouts) runs beside the other targets, which cargo runs one after another: the
# run's wall time is then the longer of the two, not their sum. Its output follows theirs.
# After it, in the same stream (which ends well before the other): the etcd cells and the
# etcd tests again on etcd 3.5, the version most clusters run (Debian's is 3.4).
conformance_log="$run/cargo-test-conformance.log"
step "cargo test --test conformance, then etcd's on etcd 3.5, beside the rest (output at the end: $conformance_log)"
(
  ok=0
  cargo test --test conformance --no-fail-fast || ok=$?
  echo "==> etcd 3.5 ($etcd35): the etcd conformance cells, etcd_live, etcd_detect and admin_live again"
  PATH="$etcd35:$PATH" etcd --version | sed -n 1p
  PATH="$etcd35:$PATH" cargo test --test conformance --no-fail-fast etcd || ok=$?
  PATH="$etcd35:$PATH" cargo test --test etcd_live --test etcd_detect --test admin_live --no-fail-fast || ok=$?
  exit "$ok"
) >"$conformance_log" 2>&1 &
conformance=$!

targets=(--lib --bins --benches)
for t in tests/*.rs; do targets+=(--test "$(basename "$t" .rs)"); done
for m in tests/*/main.rs; do
  name="$(basename "$(dirname "$m")")"
  [ "$name" = conformance ] || targets+=(--test "$name")
done
step "cargo test, every other target --no-fail-fast (run directory $run)"
cargo test "${targets[@]}" --no-fail-fast 2>&1 | tee -a "$tests_log" || status=$?
wait "$conformance" || status=$?
tee -a "$tests_log" <"$conformance_log"
report
