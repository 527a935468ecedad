//! etcd-election admin actions against real third-party participants: `etcdctl elect`, a Go
//! program on etcd 3.4's `clientv3/concurrency` and a Node program on the npm `etcd3`
//! package. Each reports its beliefs with wall-clock times; the tests assert who believes
//! what after each action, and that no two believe they lead at once for longer than the
//! bound the confirmation states. One etcd serves every case; the clients run side by side.

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::EtcdServer;
use common::campaigners::{
    Belief, Client, Participant, line_up, line_up_mixed, longest_overlap, now_ms,
};
use common::electop::{command, election, status_json};
use serde_json::Value;

/// Session TTL of the Go and Node participants (etcdctl elect's is fixed at 60 s).
const TTL: u32 = 3;
/// How long two participants may both believe they lead. The confirmation states 0 ms, as
/// measured; 50 ms allows for `etcdctl elect`, whose beliefs are timed when the harness reads
/// its output rather than by etcdctl itself.
const OVERLAP_BOUND_MS: u64 = 50;

fn tag(client: Client) -> &'static str {
    match client {
        Client::Etcdctl => "ctl",
        Client::Go => "go",
        Client::Node => "node",
    }
}

/// A third of the session TTL (the keep-alive interval), plus 10 s for the hold's slack and load.
fn notice_timeout(client: Client) -> Duration {
    let ttl = if client == Client::Etcdctl { 60 } else { TTL };
    Duration::from_secs(u64::from(ttl).div_ceil(3) + 10)
}

fn admin(etcd: &EtcdServer, home: &Path, action: &[&str]) -> Output {
    let out = command(home)
        .args(["--etcd", &etcd.endpoint(), "--prefix", "election/"])
        .args(action)
        .arg("--yes")
        .output()
        .expect("electop");
    assert!(
        out.status.success(),
        "{action:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn all_beliefs(line: &mut [Participant]) -> Vec<Belief> {
    line.iter_mut().flat_map(|p| p.beliefs().to_vec()).collect()
}

/// The time a participant first reported `belief` at or after `since`.
fn first(p: &mut Participant, belief: &str, since: u64) -> u64 {
    p.beliefs()
        .iter()
        .find(|b| b.belief == belief && b.t_ms >= since)
        .map(|b| b.t_ms)
        .unwrap_or_else(|| panic!("{} never reported {belief}", p.id))
}

/// Prints one measurement (`--nocapture`); tests/campaigners/MEASUREMENTS.md collects them.
fn measure(client: &str, action: &str, overlap: u64, told: u64, elected: u64) {
    eprintln!(
        "MEASURE {client} {action}: overlap {overlap} ms, deposed told {told} ms and successor \
         elected {elected} ms after the action"
    );
}

fn reelect(etcd: &EtcdServer, client: Client) {
    let name = format!("re-{}", tag(client));
    let el = format!("election/{name}");
    let mut line = line_up(client, etcd, &el, &["node-a", "node-b"], TTL);
    let h = common::scratch::tempdir();
    let t0 = now_ms();
    admin(etcd, h.path(), &["reelect", &name]);
    let wait = notice_timeout(client);
    let c = client.name();
    assert!(line[1].wait_belief("leader", wait), "{c}: node-b leads");
    assert!(line[0].wait_belief("lost", wait), "{c}: node-a notices");
    let (told, elected) = (
        first(&mut line[0], "lost", t0),
        first(&mut line[1], "leader", t0),
    );
    let overlap = longest_overlap(&all_beliefs(&mut line), now_ms());
    measure(client.name(), "reelect", overlap, told - t0, elected - t0);
    assert!(
        overlap <= OVERLAP_BOUND_MS,
        "{c}: two leaders for {overlap} ms: {:?}",
        all_beliefs(&mut line)
    );
    let s = status_json(
        h.path(),
        &["--etcd", &etcd.endpoint(), "--prefix", "election/"],
    );
    assert_eq!(election(&s, &name)["leader"]["id"], "node-b", "{c}: {s}");
}

fn force_leader(etcd: &EtcdServer, client: Client) {
    let name = format!("fl-{}", tag(client));
    let el = format!("election/{name}");
    let line = line_up(client, etcd, &el, &["node-a", "node-b", "node-c"], TTL);
    force_leader_on(etcd, &name, line, client.name());
}

/// Forces the third of `line` (node-a, node-b, node-c) to lead.
fn force_leader_on(etcd: &EtcdServer, name: &str, mut line: Vec<Participant>, c: &str) {
    let h = common::scratch::tempdir();
    let t0 = now_ms();
    admin(etcd, h.path(), &["force-leader", name, "node-c"]);
    // The longest keep-alive interval in the line bounds how long its hold lasts.
    let wait = line
        .iter()
        .map(|p| notice_timeout(p.client))
        .max()
        .unwrap_or_default();
    assert!(line[2].wait_belief("leader", wait), "{c}: node-c leads");
    assert!(line[0].wait_belief("lost", wait), "{c}: node-a notices");
    assert!(line[1].wait_belief("lost", wait), "{c}: node-b notices");
    let elected = first(&mut line[2], "leader", t0);
    // node-b waited in line: it may be told "elected" only once it has been told it lost,
    // or not at all; either way it must not believe it leads beside node-c.
    let b = line[1].beliefs().to_vec();
    assert!(
        b.iter().all(|x| x.belief != "leader")
            || b.iter()
                .any(|x| x.belief == "lost" && x.t_ms <= elected + OVERLAP_BOUND_MS),
        "{c}: node-b, removed from the line, believed it led: {b:?}"
    );
    let told = first(&mut line[0], "lost", t0);
    let overlap = longest_overlap(&all_beliefs(&mut line), now_ms());
    measure(c, "force-leader", overlap, told - t0, elected - t0);
    assert!(
        overlap <= OVERLAP_BOUND_MS,
        "{c}: two leaders for {overlap} ms: {:?}",
        all_beliefs(&mut line)
    );
    let s = status_json(
        h.path(),
        &["--etcd", &etcd.endpoint(), "--prefix", "election/"],
    );
    assert_eq!(election(&s, name)["leader"]["id"], "node-c", "{c}: {s}");
}

/// The lease (hex) of the first key in `dir`, and its remaining TTL.
fn leader_lease(etcd: &EtcdServer, dir: &str) -> String {
    let out = etcd.etcdctl_stdout(&["get", "--prefix", dir, "--sort-by=CREATE", "-w", "json"]);
    let v: Value = serde_json::from_str(&out).expect("etcdctl JSON");
    let lease = v["kvs"][0]["lease"]
        .as_i64()
        .expect("the leader key has a lease");
    format!("{lease:x}")
}

fn remaining_ttl(etcd: &EtcdServer, lease: &str) -> i64 {
    let out = etcd.etcdctl_stdout(&["lease", "timetolive", lease, "-w", "json"]);
    let v: Value = serde_json::from_str(&out).expect("etcdctl JSON");
    v["ttl"].as_i64().unwrap_or(-1)
}

/// The contract: a resigned participant keeps its session and does not notice.
fn resign(etcd: &EtcdServer, client: Client) {
    let name = format!("rs-{}", tag(client));
    let el = format!("election/{name}");
    let mut line = line_up(client, etcd, &el, &["node-a", "node-b"], TTL);
    let lease = leader_lease(etcd, &format!("{el}/"));
    let h = common::scratch::tempdir();
    admin(
        etcd,
        h.path(),
        &["resign", &name, "--expect-leader", "node-a"],
    );
    let c = client.name();
    assert!(
        line[1].wait_belief("leader", Duration::from_secs(10)),
        "{c}: node-b leads"
    );
    // A keep-alive after the resign renews node-a's lease: its session lives on. Seen as the
    // remaining TTL going up, or (renewals every exact third of the TTL may hide that) as
    // the lease outliving the remaining TTL it had at the resign.
    let mut low = remaining_ttl(etcd, &lease);
    let outlived = std::time::Instant::now() + Duration::from_secs(low.max(0) as u64 + 1);
    common::wait_until(
        &format!("{c}: node-a renews its lease"),
        notice_timeout(client),
        || {
            let now = remaining_ttl(etcd, &lease);
            let renewed = now > low || (now > 0 && std::time::Instant::now() > outlived);
            low = low.min(now);
            renewed
        },
    );
    assert_eq!(line[0].belief(), "leader", "{c}: node-a does not notice");
    let overlap = longest_overlap(&all_beliefs(&mut line), now_ms());
    assert!(overlap > 0, "{c}: two participants believe they lead");
}

fn each_client(case: fn(&EtcdServer, Client)) {
    let etcd = EtcdServer::start();
    std::thread::scope(|s| {
        for client in Client::ALL {
            let etcd = &etcd;
            s.spawn(move || case(etcd, client));
        }
    });
}

#[test]
fn reelect_ends_the_old_session_before_the_next_is_elected() {
    each_client(reelect);
}

#[test]
fn force_leader_ends_the_sessions_ahead_before_the_target_is_elected() {
    each_client(force_leader);
}

#[test]
fn resign_is_not_noticed_by_election_clients() {
    each_client(resign);
}

#[test]
fn force_leader_in_a_line_of_all_three_clients() {
    let etcd = EtcdServer::start();
    let members = [
        (Client::Etcdctl, "node-a"),
        (Client::Go, "node-b"),
        (Client::Node, "node-c"),
    ];
    let line = line_up_mixed(&etcd, "election/fl-mixed", &members, TTL);
    force_leader_on(&etcd, "fl-mixed", line, "mixed etcdctl/Go/Node");
}
