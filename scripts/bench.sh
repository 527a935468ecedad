#!/usr/bin/env bash
# One table of what electop costs at 10,000 elections on every store, beside each store's own
# tools in the same run (benches/table; docs/PERFORMANCE.md says what each figure is).
#
#   scripts/bench.sh                                  # every store, full windows (about 15 min)
#   scripts/bench.sh --stores etcd,sqlite --quick     # fewer stores, 4 s windows, 3 runs
#   scripts/bench.sh --baseline /path/to/other/electop   # that build too, in turns: a ratio column
#   scripts/bench.sh --n 1000                         # other sizes
#   scripts/bench.sh --etcd-as-loaded                 # etcd not restarted after its load
#
# Stores: etcd, sqlite, pg, zk, redis, kube (a kube-apiserver, beside kubectl). It builds this tree's release electop and the bench,
# and needs only what scripts/install-deps.sh installs (servers, their CLIs, tmux, javac).
# TABLE_PERF=DIR also records a `perf record -g` of this build's processes in each window
# (when perf is installed), and keeps the strace of its write calls under churn.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_HOME="${CARGO_HOME:-/root/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-/root/.rustup}"
for arg in "$@"; do
  case "$arg" in
    -h | --help)
      sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
  esac
done
scripts/install-deps.sh
# The electop measured is the release build as shipped: `cargo bench` builds another, with the
# dev-dependencies' features (tokio's test-util puts a lock in every timer's clock read).
cargo build --release --bin electop
mkdir -p target/bench
cp target/release/electop target/bench/electop
# A --bin of the caller's comes first and wins.
exec cargo bench --bench table -- "$@" --bin target/bench/electop
