#!/usr/bin/env bash
# Starts a throwaway etcd on a free loopback port, fills it with live demo
# elections, and runs electop against it. Everything started here (etcd,
# campaigners, lease keep-alive) is killed and the temp dir removed on exit.
#
# Extra arguments are passed to electop. Demo contents:
#   etcd-election scheme (etcdctl elect):
#     /demo/election/scheduler   node-a (leader), node-b, node-c waiting
#     /demo/election/compactor   node-a (leader), node-b waiting
#   etcd-lease-key scheme (a key on a lease):
#     /demo/leader/billing       node-b, lease TTL 15s, kept alive
#     /demo/leader/reports       node-c, lease TTL 30s, NOT kept alive (expires)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log() { printf 'demo-etcd: %s\n' "$*" >&2; }

"$root/scripts/install-deps.sh"

log "building electop (cargo build --release)"
cargo build --release --quiet
electop="${CARGO_TARGET_DIR:-$root/target}/release/electop"
[[ -x $electop ]] || { log "no binary at $electop"; exit 1; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/electop-demo.XXXXXX")"
etcd_pid=""
electop_pid=""
saved_tty=""
if [[ -t 0 ]]; then saved_tty="$(stty -g 2>/dev/null || true)"; fi
helpers=() # etcdctl elect / lease keep-alive processes
cleaned=0
# (shellcheck 0.9 thinks functions only called from traps are unreachable.)
# shellcheck disable=SC2317
# Stops processes by pid: SIGTERM, up to $1 tenths of a second grace, SIGKILL.
stop_pids() {
  local grace="$1" pid alive i
  shift
  (($# == 0)) && return 0
  kill -TERM "$@" 2>/dev/null || true
  for ((i = 0; i < grace; i++)); do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
  for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
}
# shellcheck disable=SC2317
cleanup() {
  ((cleaned)) && return
  cleaned=1
  if [[ -n $electop_pid ]]; then
    # Only when the script itself was interrupted; give the TUI time to
    # restore the terminal, and restore it ourselves if it had to be killed.
    stop_pids 30 "$electop_pid"
    if [[ -n $saved_tty ]]; then stty "$saved_tty" 2>/dev/null || true; fi
  fi
  # etcdctl elect resigns on SIGTERM, which needs etcd: stop the helpers first
  # (a resign against a dead etcd would hang until SIGKILL).
  stop_pids 30 "${helpers[@]}"
  if [[ -n $etcd_pid ]]; then stop_pids 50 "$etcd_pid"; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# A port nobody listens on (bash cannot bind, so: a random port that refuses
# connections; etcd startup is retried below if we lose a race anyway).
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    port_in_use "$p" || { echo "$p"; return; }
  done
}

export ETCDCTL_API=3
for attempt in 1 2 3 4 5; do
  port="$(pick_port)"
  peer="$(pick_port)"
  [[ $port == "$peer" ]] && continue
  rm -rf "$tmp/data"
  etcd --name demo --data-dir "$tmp/data" \
    --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "demo=http://127.0.0.1:$peer" \
    --heartbeat-interval=10 --election-timeout=100 --logger=zap --log-level=error \
    >"$tmp/etcd.log" 2>&1 &
  etcd_pid=$!
  ready=0
  for _ in {1..500}; do # 10 s
    if ! kill -0 "$etcd_pid" 2>/dev/null; then break; fi
    if port_in_use "$port" &&
      etcdctl --endpoints="http://127.0.0.1:$port" --dial-timeout=1s --command-timeout=1s \
        endpoint health >/dev/null 2>&1; then
      ready=1
      break
    fi
    sleep 0.02
  done
  ((ready)) && break
  log "etcd did not come up on 127.0.0.1:$port (attempt $attempt); log tail:"
  tail -n 20 "$tmp/etcd.log" >&2 || true
  kill -KILL "$etcd_pid" 2>/dev/null || true
  wait "$etcd_pid" 2>/dev/null || true
  etcd_pid=""
done
[[ -n $etcd_pid ]] || { log "giving up on starting etcd"; exit 1; }
endpoint="127.0.0.1:$port"
# An array, not a function: a backgrounded function runs in a subshell, so $!
# would be that subshell's pid and killing it would leave etcdctl running.
ctl=(etcdctl --endpoints="http://$endpoint")
log "etcd ready at $endpoint (data in $tmp)"

# --- etcd-election scheme: etcdctl elect campaigners --------------------------
# Each campaigner holds its own session lease; the first to campaign leads, the
# rest wait in line. The leader prints its key and value lines once elected.
campaign() {
  local election="$1" node="$2" out
  out="$tmp/elect-$(basename "$election")-$node.out"
  "${ctl[@]}" elect "$election" "$node" >"$out" 2>&1 &
  helpers+=("$!")
}
wait_leader() {
  local election="$1" node="$2" out
  out="$tmp/elect-$(basename "$election")-$node.out"
  for _ in {1..250}; do # 5 s
    grep -qx "$node" "$out" 2>/dev/null && return 0
    sleep 0.02
  done
  log "$node never became leader of $election:"; cat "$out" >&2; return 1
}
queued() { # wait until the election has $2 candidates, so the queue order is fixed
  local election="$1" want="$2"
  for _ in {1..250}; do
    (($("${ctl[@]}" get --prefix --keys-only "$election/" | grep -c .) >= want)) && return 0
    sleep 0.02
  done
  log "$election: expected $want candidates"; return 1
}

campaign /demo/election/scheduler node-a
wait_leader /demo/election/scheduler node-a
campaign /demo/election/scheduler node-b
queued /demo/election/scheduler 2
campaign /demo/election/scheduler node-c
queued /demo/election/scheduler 3

campaign /demo/election/compactor node-a
wait_leader /demo/election/compactor node-a
campaign /demo/election/compactor node-b
queued /demo/election/compactor 2

# --- etcd-lease-key scheme: a leader key attached to a lease -------------------
# `etcdctl lease grant` prints: lease 0616a2049134b121 granted with TTL(15s)
# (16 hex digits, zero-padded; election keys use the unpadded form).
grant() { "${ctl[@]}" lease grant "$1" | awk '$1 == "lease" && $3 == "granted" { print $2 }'; }

billing_lease="$(grant 15)"
[[ -n $billing_lease ]] || { log "lease grant failed"; exit 1; }
"${ctl[@]}" put --lease="$billing_lease" /demo/leader/billing node-b >/dev/null
"${ctl[@]}" lease keep-alive "$billing_lease" >"$tmp/keepalive-billing.out" 2>&1 &
helpers+=("$!")
# The candidate registry ("Leader Election using etcd from C#"): every live instance on its own kept-alive lease.
for node in node-a node-b node-c; do
  lease="$(grant 15)"
  "${ctl[@]}" put --lease="$lease" "/demo/registry/billing/$node" "instance $node" >/dev/null
  "${ctl[@]}" lease keep-alive "$lease" >"$tmp/keepalive-$node.out" 2>&1 &
  helpers+=("$!")
done

reports_lease="$(grant 30)"
[[ -n $reports_lease ]] || { log "lease grant failed"; exit 1; }
"${ctl[@]}" put --lease="$reports_lease" /demo/leader/reports node-c >/dev/null # expires in 30 s

log "demo data loaded; starting electop"

# ============================================================================
# electop invocation: the one place to adjust when the TUI's flags change.
# It runs as a background job that keeps the terminal (`<&0`; same process
# group, so it still reads keys and gets SIGWINCH) and the script waits for it:
# that way a SIGINT/SIGTERM to this script runs the cleanup trap immediately
# (bash defers traps while a foreground command runs).
"$electop" --etcd "$endpoint" \
  --prefix /demo/election/ --prefix /demo/leader/ --registry /demo/registry/ \
  "$@" <&0 &
electop_pid=$!
# ============================================================================

status=0
wait "$electop_pid" || status=$?
electop_pid=""
exit "$status"
