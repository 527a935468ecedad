#!/usr/bin/env bash
# The three-node demo on embedded SQLite: three `electop node` participants electing a
# leader beside the dashboard. Keys: 1-3 pick a node, x kill it, p pause/resume, r restart,
# F/R/S the admin actions, q quit. Extra arguments go to `electop demo` (see --help), e.g.
#   scripts/demo.sh --store etcd --spawn-etcd
#   scripts/demo.sh --store zookeeper --spawn-zookeeper
#   scripts/demo.sh --store redis --spawn-redis
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# The default demo needs no server (SQLite is built in); --store etcd --spawn-etcd needs etcd,
# --store zookeeper --spawn-zookeeper ZooKeeper's jars and java, --store redis --spawn-redis
# redis-server.
case " $* " in
  *etcd*) scripts/install-deps.sh etcd-server etcd-client ;;
  *zookeeper*) scripts/install-deps.sh zookeeper openjdk-17-jdk-headless ;;
  *spawn-redis*) scripts/install-deps.sh redis-server ;;
esac
echo "demo: building electop (cargo build --release)" >&2
cargo build --release --quiet
exec "${CARGO_TARGET_DIR:-$root/target}/release/electop" demo "$@"
