#!/usr/bin/env bash
# Installs the system packages electop's tests and demos need, only if missing.
#
# Idempotent and quick: a single dpkg-query when everything is present, and
# silent in that case. Otherwise prints one line per package it installs.
# Services that the packages would normally start (etcd, mariadb, postgresql,
# prometheus, prometheus-alertmanager, redis-server; zookeeper starts none) are kept from starting with a temporary
# /usr/sbin/policy-rc.d; the Prometheus ones are also left disabled at boot, since
# the tests start their own on free ports and nothing should hold 9090/9093.
# With arguments, only those packages (the demo asks for etcd only when it needs it).
set -euo pipefail

# golang-go and golang-etcd-server-dev build the Go election campaigner the tests start
# (etcd 3.4's clientv3/concurrency, offline, from /usr/share/gocode).
# prometheus (with promtool) and prometheus-alertmanager (with amtool) check the shipped
# alert rules and scrape `electop serve` in the tests.
# zookeeper (the server jars, started by the tests on free ports; Debian's `zookeeper` ships no
# service, that is `zookeeperd`, which is not installed), libcurator-recipes-java (Apache
# Curator's LeaderLatch/LeaderSelector) and openjdk-17-jdk-headless (javac) build and run the
# Java election campaigner; python3-kazoo runs the kazoo one.
# redis-server (started by the tests on free ports with their own config) and python3-redis
# (redis-py's Lock, a real Redis lock holder).
# python3-etcd: Patroni's etcd3 store needs it, and patroni's package depends on python3-etcd
# OR python3-kazoo OR ...: installed with python3-kazoo in one apt-get, apt takes kazoo as
# the choice and Patroni then finds no etcd ("Available implementations: exhibitor,
# kubernetes, zookeeper"), so it is named here.
# python3-psycopg2: tests/campaigners/pg/advisory.py, a Python service holding a PostgreSQL
# advisory lock (pg_advisory_lock / pg_try_advisory_lock) as applications do.
# dpkg-dev (dpkg-source), rsync, jq and golang-github-modern-go-reflect2-dev: what
# scripts/build-kube.sh needs to build kube-apiserver and client-go's candidate from Debian's
# kubernetes source package.
PACKAGES=(etcd-server etcd-client tmux postgresql mariadb-server sqlite3 golang-go golang-etcd-server-dev openssl patroni python3-etcd prometheus prometheus-alertmanager zookeeper libcurator-recipes-java openjdk-17-jdk-headless python3-kazoo redis-server python3-redis python3-psycopg2 dpkg-dev rsync jq golang-github-modern-go-reflect2-dev)
if (($# > 0)); then
  PACKAGES=("$@")
fi

log() { printf 'install-deps: %s\n' "$*" >&2; }

# One dpkg-query for all packages: prints "name<TAB>status" for known ones.
# Packages dpkg has never heard of are simply absent from the output.
installed="$(dpkg-query -W -f='${Package}\t${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)"
missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! grep -qx "${pkg}	installed" <<<"$installed"; then
    missing+=("$pkg")
  fi
done
((${#missing[@]} == 0)) && exit 0

SUDO=()
if ((EUID != 0)); then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    log "need root (or sudo) to install: ${missing[*]}"
    exit 1
  fi
fi

# Keep maintainer scripts from starting system services while we install.
POLICY=/usr/sbin/policy-rc.d
created_policy=0
workdir="$(mktemp -d)"
cleanup() {
  if ((created_policy)); then "${SUDO[@]}" rm -f "$POLICY"; fi
  rm -rf "$workdir"
}
trap cleanup EXIT
if [[ ! -e $POLICY ]]; then
  printf '#!/bin/sh\n# temporary, written by electop scripts/install-deps.sh\nexit 101\n' >"$workdir/policy-rc.d"
  "${SUDO[@]}" install -m 0755 "$workdir/policy-rc.d" "$POLICY"
  created_policy=1
fi

apt_install() {
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}" >"$workdir/apt.log" 2>&1
}

if ! apt_install; then
  # Stale or empty package lists: refresh them once and retry.
  if grep -qE 'Unable to locate package|has no installation candidate|is not available|Failed to fetch|404 +Not Found' "$workdir/apt.log"; then
    log "package lists look stale; running apt-get update"
    if ! "${SUDO[@]}" apt-get update >"$workdir/update.log" 2>&1; then
      cat "$workdir/update.log" >&2
      log "apt-get update failed"
      exit 1
    fi
    if ! apt_install; then
      cat "$workdir/apt.log" >&2
      log "apt-get install failed for: ${missing[*]}"
      exit 1
    fi
  else
    cat "$workdir/apt.log" >&2
    log "apt-get install failed for: ${missing[*]}"
    exit 1
  fi
fi

# policy-rc.d stops the services starting now; on a systemd host the packages still
# enable them for the next boot. Only for what this run installed: a Prometheus the
# machine already had is its owner's business.
if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1; then
  for pkg in "${missing[@]}"; do
    case "$pkg" in
      prometheus | prometheus-alertmanager | redis-server)
        "${SUDO[@]}" systemctl disable --now "$pkg.service" >/dev/null 2>&1 || true
        ;;
      zookeeper)
        # Only `zookeeperd` has a unit; should a later Debian move it here, keep it off.
        "${SUDO[@]}" systemctl disable --now zookeeper.service >/dev/null 2>&1 || true
        ;;
    esac
  done
fi

for pkg in "${missing[@]}"; do
  echo "installed $pkg"
done
