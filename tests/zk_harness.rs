//! The ZooKeeper test harness against real servers and real clients: a standalone ZooKeeper
//! with Curator `LeaderLatch`, Curator `LeaderSelector` and kazoo `Election` participants
//! (the node layouts the ZooKeeper section of docs/election-models.md lists, read with
//! ZooKeeper's own CLI, and a SIGKILLed leader replaced once its session times out), and a
//! three-member ensemble that keeps a quorum when one member is killed.

mod common;

use std::time::Duration;

use common::T;
use common::campaigners::now_ms;
use common::zk_campaigners::{ZkClient, ZkParticipant};
use common::zookeeper::{ZkServer, sequence};
use common::zookeeper_ensemble::ZkEnsemble;

const SESSION_MS: u32 = 3000;

fn path_of(client: ZkClient) -> &'static str {
    match client {
        ZkClient::CuratorLatch => "/election/latch",
        ZkClient::CuratorSelector => "/election/selector",
        ZkClient::Kazoo => "/election/kazoo",
    }
}

/// Whether `s` is a UUID in its 8-4-4-4-12 form (`dashed`) or as 32 hex digits.
fn is_uuid(s: &str, dashed: bool) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit());
    if dashed {
        let parts: Vec<&str> = s.split('-').collect();
        parts.len() == 5 && [8, 4, 4, 4, 12].iter().zip(&parts).all(|(n, p)| hex(p, *n))
    } else {
        hex(s, 32)
    }
}

/// Whether `name` is a node `client` creates: `_c_<uuid>-latch-<seq>`,
/// `_c_<uuid>-lock-<seq>` or `<uuid>__lock__<seq>`, seq 10 digits.
fn matches_layout(client: ZkClient, name: &str) -> bool {
    let Some((head, seq)) = name.split_at_checked(name.len().saturating_sub(10)) else {
        return false;
    };
    if !seq.chars().all(|c| c.is_ascii_digit()) || seq.len() != 10 {
        return false;
    }
    let uuid = match client {
        ZkClient::CuratorLatch => head
            .strip_prefix("_c_")
            .and_then(|h| h.strip_suffix("-latch-")),
        ZkClient::CuratorSelector => head
            .strip_prefix("_c_")
            .and_then(|h| h.strip_suffix("-lock-")),
        ZkClient::Kazoo => head.strip_suffix("__lock__"),
    };
    uuid.is_some_and(|u| is_uuid(u, client != ZkClient::Kazoo))
}

fn elected(p: &mut ZkParticipant, what: &str) {
    if !p.wait_belief("leader", T) {
        let (name, stderr) = (p.client.name(), p.stderr());
        panic!(
            "{name} {} not elected ({what}): {:?}\nstderr: {stderr}",
            p.id.clone(),
            p.beliefs()
        );
    }
}

#[test]
fn each_client_leads_in_its_own_layout_and_a_killed_leader_is_replaced_after_its_session() {
    let server = ZkServer::start();
    let ep = server.endpoint();
    // The first of each pair is elected before the second starts, so the line is known.
    let mut pairs: Vec<(ZkParticipant, ZkParticipant)> = Vec::new();
    let mut leaders: Vec<ZkParticipant> = ZkClient::ALL
        .iter()
        .map(|c| ZkParticipant::start(*c, &ep, path_of(*c), &format!("{c:?}-a"), SESSION_MS))
        .collect();
    for p in &mut leaders {
        elected(p, "alone on its path");
    }
    for a in leaders {
        let c = a.client;
        let b = ZkParticipant::start(c, &ep, path_of(c), &format!("{c:?}-b"), SESSION_MS);
        pairs.push((a, b));
    }
    for (a, b) in &mut pairs {
        assert!(
            b.wait_belief("follower", T),
            "{} {} never campaigned: {}",
            b.client.name(),
            b.id,
            b.stderr()
        );
        assert_eq!(a.belief().as_deref(), Some("leader"), "{:?}", a.beliefs());
    }

    // The layouts, read with ZooKeeper's own CLI once both are in line.
    let paths: Vec<&str> = ZkClient::ALL.iter().map(|c| path_of(*c)).collect();
    let nodes = common::wait_for("both participants of each client in line", T, || {
        let nodes = server.nodes(&paths);
        if nodes.iter().all(|n| n.len() == 2) {
            Ok(nodes)
        } else {
            Err(format!("{nodes:?}"))
        }
    });
    for ((client, path), line) in ZkClient::ALL.iter().zip(&paths).zip(&nodes) {
        eprintln!("LAYOUT {}: {path} {line:?}", client.name());
        for (name, _) in line {
            assert!(
                matches_layout(*client, name),
                "{}: node {path}/{name}",
                client.name()
            );
        }
        let ids: Vec<&str> = line.iter().map(|(_, data)| data.as_str()).collect();
        let want = [format!("{client:?}-a"), format!("{client:?}-b")];
        assert_eq!(
            ids,
            want,
            "{}: node data in line order, leader first",
            client.name()
        );
        assert!(sequence(&line[0].0) < sequence(&line[1].0));
    }

    // SIGKILL each leader: its node stays until its session times out, then the next leads.
    let killed_at = now_ms();
    for (a, _) in &mut pairs {
        a.kill();
    }
    let margin = Duration::from_secs(10);
    for (_, b) in &mut pairs {
        elected(b, "after its leader was killed");
        let after = b.first("leader").expect("elected") - killed_at;
        eprintln!("FAILOVER {}: {after} ms after SIGKILL", b.client.name());
        assert!(
            after >= u64::from(SESSION_MS) / 2,
            "{} elected {after} ms after the kill, before the session could time out",
            b.client.name()
        );
        assert!(
            after <= u64::from(SESSION_MS) + margin.as_millis() as u64,
            "{} elected only {after} ms after the kill",
            b.client.name()
        );
    }
    let after = server.nodes(&paths);
    for ((client, line), path) in ZkClient::ALL.iter().zip(&after).zip(&paths) {
        let ids: Vec<&str> = line.iter().map(|(_, d)| d.as_str()).collect();
        assert_eq!(ids, [format!("{client:?}-b")], "{path} after the failover");
    }
}

#[test]
fn an_ensemble_keeps_its_quorum_when_one_member_is_killed() {
    let mut ensemble = ZkEnsemble::start(3);
    let modes: Vec<Option<String>> = (0..3).map(|i| ensemble.mode(i)).collect();
    let leader = modes
        .iter()
        .position(|m| m.as_deref() == Some("leader"))
        .unwrap_or_else(|| panic!("no leader among {modes:?}"));
    ensemble.kill(leader);
    assert_eq!(
        ensemble.mode(leader),
        None,
        "a killed member still answers srvr"
    );
    let rest: Vec<usize> = (0..3).filter(|i| *i != leader).collect();
    ensemble.wait_quorum(&rest, Duration::from_secs(30));
    let after: Vec<Option<String>> = rest.iter().map(|i| ensemble.mode(*i)).collect();
    eprintln!("ENSEMBLE before {modes:?}, killed member {leader}, after {after:?}");
    assert_eq!(ensemble.endpoints().len(), 3);
}
