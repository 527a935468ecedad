//! electop against a real ZooKeeper (Debian's `zookeeper` package, started here with a
//! throwaway data dir on a free port), with candidates written as kazoo writes them:
//! ephemeral sequential `<uuid>__lock__<seq>` nodes whose data is the participant id.

mod common;

use std::time::Duration;

use common::T;
use common::electop::{Watch, election, status_history_json, status_json};
use common::zookeeper::ZkServer;
use zookeeper_client::{Acls, Client, CreateMode};

/// One kazoo-style candidate: its own session, holding its ephemeral sequential node.
struct Candidate {
    client: Client,
    path: String,
}

async fn join(endpoint: &str, election: &str, uuid: &str, id: &str) -> Candidate {
    let connect = Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(endpoint);
    let client = tokio::time::timeout(T, connect)
        .await
        .expect("a candidate connects within the deadline")
        .expect("connect");
    let dir = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.mkdir(election, &dir).await.expect("mkdir");
    let node = format!("{election}/{uuid}__lock__");
    let mode = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (_, seq) = client
        .create(&node, id.as_bytes(), &mode)
        .await
        .expect("create");
    Candidate {
        client,
        path: format!("{node}{seq}"),
    }
}

fn ids(e: &serde_json::Value) -> Vec<String> {
    e["candidates"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| c["id"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The leader and line from `status`, then the leader's node deleted: `watch` reports the
/// next in line, within the deadline.
#[test]
fn kazoo_nodes_show_leader_and_line_and_a_deleted_leader_is_followed() {
    let zk = ZkServer::start();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let ep = zk.endpoint();
    // The uuids sort the other way round from the sequence numbers: the line must not.
    let a = rt.block_on(join(&ep, "/election/jobs", "ffff", "node-a"));
    let b = rt.block_on(join(&ep, "/election/jobs", "0000", "node-b"));
    let c = rt.block_on(join(&ep, "/election/jobs", "8888", "node-c"));

    let home = common::scratch::tempdir();
    let args = ["--zk", ep.as_str(), "--prefix", "/election"];
    let s = status_json(home.path(), &args);
    let e = election(&s, "jobs");
    assert_eq!(e["scheme"], "zookeeper", "{e:#}");
    assert_eq!(e["leader"]["id"], "node-a", "{e:#}");
    assert_eq!(ids(e), ["node-a", "node-b", "node-c"], "{e:#}");

    // The table, as a person reads it: the election, its leader, two waiting.
    let out = common::electop::command(home.path())
        .args(args)
        .args(["status", "-o", "wide"])
        .output()
        .expect("run electop status");
    let table = String::from_utf8_lossy(&out.stdout);
    eprintln!("{table}");
    let row = table
        .lines()
        .find(|l| l.contains("jobs"))
        .unwrap_or_default();
    assert!(
        row.contains("node-a") && row.contains("zookeeper"),
        "{table}"
    );

    let mut w = Watch::start(home.path(), &args);
    w.wait_synced(1);
    rt.block_on(c.client.delete(&a.path, None))
        .expect("delete the leader's node");
    let changed = w.wait_for("the next in line leads", T, |v| {
        v["kind"] == "leader_changed" && v["election"] == "jobs"
    });
    assert_eq!(changed["from"], "node-a", "{changed:#}");
    assert_eq!(changed["to"], "node-b", "{changed:#}");

    let s = status_json(home.path(), &args);
    assert_eq!(ids(election(&s, "jobs")), ["node-b", "node-c"]);
    drop((a, b, c));
}

/// electop's own record of a ZooKeeper source is shared by every run: a `watch` (which keeps
/// only 8 changes per election in memory) starting on it must not cut it, so a later
/// `status --history` still has all ten changes the first watch saw.
#[test]
fn a_watch_does_not_cut_the_record_the_dashboard_reads_back() {
    let zk = ZkServer::start();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let ep = zk.endpoint();
    let home = common::scratch::tempdir();
    let args = ["--zk", ep.as_str(), "--prefix", "/record"];
    let mut held = vec![rt.block_on(join(&ep, "/record/jobs", "a", "n0"))];
    let mut w = Watch::start(home.path(), &args);
    w.wait_synced(1);
    for i in 1..=10 {
        let next = rt.block_on(join(&ep, "/record/jobs", "a", &format!("n{i}")));
        let leader = held.last().expect("a leader").path.clone();
        rt.block_on(next.client.delete(&leader, None))
            .expect("delete the leader's node");
        let to = format!("n{i}");
        w.wait_for(&format!("the change to {to}"), T, |v| {
            v["kind"] == "leader_changed" && v["to"] == to.as_str()
        });
        held.push(next);
    }
    drop(w);
    // A second run opens the record (and, before the fix, rewrote it with its own bound).
    let mut again = Watch::start(home.path(), &args);
    again.wait_synced(1);
    drop(again);

    let s = status_history_json(home.path(), &args);
    let history = election(&s, "jobs")["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let to: Vec<&str> = history.iter().filter_map(|h| h["to"].as_str()).collect();
    for i in 1..=10 {
        let id = format!("n{i}");
        assert!(to.contains(&id.as_str()), "{id} missing from {to:?}");
    }
    drop(held);
}

/// Nothing listening: `status` fails at once, in ZooKeeper's words.
#[test]
fn nothing_listening_is_said_plainly() {
    let home = common::scratch::tempdir();
    let port = common::free_port().to_string();
    let ep = format!("127.0.0.1:{port}");
    let started = std::time::Instant::now();
    let out = common::electop::command(home.path())
        .args(["--zk", ep.as_str(), "status", "--json", "--timeout", "20s"])
        .output()
        .expect("run electop");
    let took = started.elapsed();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("nothing listens at {ep}")), "{err}");
    // A refusal is an answer: said at once, as for etcd and Redis, not waited out.
    assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
}

/// A server that stops answering is reported down, in words, and once it answers again
/// the source is connected and shows the same leader.
#[test]
fn a_frozen_server_is_reported_down_then_back() {
    let zk = ZkServer::start();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let ep = zk.endpoint();
    let a = rt.block_on(join(&ep, "/election/jobs", "u1", "node-a"));
    let home = common::scratch::tempdir();
    let args = ["--zk", ep.as_str(), "--prefix", "/election"];
    let mut w = Watch::start(home.path(), &args);
    w.wait_synced(1);
    zk.freeze(true);
    let down = w.wait_for("the source down", T, |v| v["kind"] == "disconnected");
    let said = down.to_string();
    assert!(
        said.contains("no answer from ZooKeeper") || said.contains("connection to ZooKeeper lost"),
        "{down:#}"
    );
    zk.freeze(false);
    // Only what comes after the thaw counts: the first connection is in `seen` too.
    w.seen.clear();
    w.wait_for("connected again", T * 2, |v| v["kind"] == "connected");
    let s = status_json(home.path(), &args);
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-a");
    drop(a);
}

/// The first read of 300 elections is shown as it goes: the server's count of znodes at
/// once, elections before the source is connected, each with the leader the full read
/// then gives it, and no leader change told for what was only being read.
#[test]
fn the_first_read_is_shown_as_it_goes_and_tells_no_change() {
    use electop::model::{ConnState, SourceEvent};
    const N: usize = 300;
    let zk = ZkServer::start();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let ep = zk.endpoint();
    let client = rt.block_on(async {
        let connect = Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&ep);
        tokio::time::timeout(T, connect)
            .await
            .expect("connects within the deadline")
            .expect("connect")
    });
    let dir = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let node = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    rt.block_on(client.mkdir("/many", &dir)).expect("mkdir");
    rt.block_on(futures::future::join_all((0..N).map(|i| {
        let (client, dir, node) = (&client, &dir, &node);
        async move {
            let election = format!("/many/e{i:03}");
            client.create(&election, b"", dir).await.expect("election");
            let id = format!("node-{i}");
            let path = format!("{election}/u{i}__lock__");
            client
                .create(&path, id.as_bytes(), node)
                .await
                .expect("node");
        }
    })));

    let args = ["electop", "--zk", ep.as_str(), "--prefix", "/many"];
    let cli = <electop::cli::Cli as clap::Parser>::parse_from(args);
    let sources = cli
        .sources
        .resolve(&electop::config::Config::default())
        .expect("sources");
    let opts = electop::backend::BackendOptions::default();
    let (loading, batches, told, read_at_first) = rt.block_on(async {
        let mut s = electop::runtime::Sources::spawn(&sources, &opts).expect("spawn");
        let (mut loading, mut batches, mut told) = (vec![], vec![], vec![]);
        // How far the read had got when the first election was sent.
        let mut read_at_first = None;
        let deadline = tokio::time::Instant::now() + T;
        loop {
            let ev = tokio::time::timeout_at(deadline, s.events.recv())
                .await
                .expect("synced within the deadline")
                .expect("source alive");
            match ev {
                SourceEvent::Loading {
                    read, total, what, ..
                } => loading.push((read, total, what)),
                SourceEvent::Conn {
                    state: ConnState::Connected,
                    ..
                } => break,
                SourceEvent::Elections { elections, .. } => {
                    if batches.is_empty() {
                        read_at_first = loading.last().map(|l: &(usize, usize, _)| l.0);
                    }
                    let shown: Vec<(String, Option<String>)> = elections
                        .into_iter()
                        .map(|e| (e.name, e.leader.map(|l| l.id)))
                        .collect();
                    batches.push(shown);
                }
                SourceEvent::Happened(e) => told.push(e.kind),
                _ => {}
            }
        }
        // The leader's node deleted while its session lives on (it holds the others):
        // resigned, from the check made beside the election's re-read.
        let path = format!("/many/e000/{}", {
            let names = client.list_children("/many/e000").await.expect("list");
            names.into_iter().next().expect("the leader's node")
        });
        client.delete(&path, None).await.expect("delete");
        let lost = loop {
            let ev = tokio::time::timeout_at(deadline, s.events.recv())
                .await
                .expect("the loss within the deadline")
                .expect("source alive");
            if let SourceEvent::Happened(e) = ev
                && e.kind == electop::model::EventKind::LeaderLost
            {
                break e;
            }
        };
        assert_eq!(lost.election.as_deref(), Some("e000"));
        assert_eq!(
            lost.cause,
            Some(electop::model::Cause::Resigned),
            "{lost:?}"
        );
        s.shutdown().await;
        (loading, batches, told, read_at_first)
    });
    // The prefix's 300 elections and a candidate in each, counted before the read.
    assert_eq!(loading.first(), Some(&(0, 2 * N, "znodes")), "{loading:?}");
    // The prefix's children are read in chunks and each chunk's elections at once: the
    // first election is shown before all 300 election znodes are read.
    let first = read_at_first.expect("a count before the first election");
    assert!(first < N, "first election shown after {first} znodes read");
    // The elections read so far, then the whole read (sent just before it is connected).
    let (whole, early) = batches.split_last().expect("the whole read");
    assert_eq!(whole.len(), N);
    assert!(!early.is_empty(), "no election shown before the read ended");
    let whole: std::collections::BTreeMap<_, _> = whole.iter().cloned().collect();
    for (name, leader) in early.iter().flatten() {
        assert_eq!(
            whole.get(name),
            Some(leader),
            "{name} as the whole read has it"
        );
        let i: usize = name[1..].parse().expect("e<i>");
        assert_eq!(leader.as_deref(), Some(format!("node-{i}").as_str()));
    }
    assert!(
        !told.iter().any(|k| matches!(
            k,
            electop::model::EventKind::LeaderElected | electop::model::EventKind::LeaderChanged
        )),
        "a read is no change: {told:?}"
    );
    drop(client);
}

/// Two candidates' nodes go at one moment (deleted in one transaction, as one session close
/// takes all its nodes): ZooKeeper's watch gives two deletions in order, so the leadership
/// passed n1 -> n2, then n2 -> n3. A re-read after the first deletion saw both gone and
/// told only n1 -> n3, a change that never happened, and lost n2's tenure.
#[test]
fn two_nodes_gone_at_once_are_two_changes_in_the_store_order() {
    let zk = ZkServer::start();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let ep = zk.endpoint();
    let a = rt.block_on(join(&ep, "/together/jobs", "u1", "n1"));
    let b = rt.block_on(join(&ep, "/together/jobs", "u2", "n2"));
    let c = rt.block_on(join(&ep, "/together/jobs", "u3", "n3"));
    let home = common::scratch::tempdir();
    let args = ["--zk", ep.as_str(), "--prefix", "/together"];
    let mut w = Watch::start(home.path(), &args);
    w.wait_synced(1);
    rt.block_on(async {
        let mut multi = c.client.new_multi_writer();
        multi.add_delete(&a.path, None).expect("delete n1");
        multi.add_delete(&b.path, None).expect("delete n2");
        multi.commit().await.expect("one transaction")
    });
    w.wait_for("the change to n3", T, |v| {
        v["kind"] == "leader_changed" && v["to"] == "n3"
    });
    let changes: Vec<(String, String, String)> = w
        .seen
        .iter()
        .filter(|v| v["election"] == "jobs")
        .filter(|v| matches!(v["kind"].as_str(), Some("leader_changed" | "leader_lost")))
        .map(|v| {
            let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
            (s("kind"), s("from"), s("to"))
        })
        .collect();
    let want = |from: &str, to: &str| ("leader_changed".into(), from.into(), to.into());
    assert_eq!(
        changes,
        [want("n1", "n2"), want("n2", "n3")],
        "{:#?}",
        w.seen
    );
    drop((a, b, c));
}

/// `status` in a cron job: stdout is the table alone, however many runs went before (each
/// leaves a stretch no electop watched, which was said on stdout, one line more per run);
/// what electop notes about the source goes to stderr.
#[test]
fn status_prints_the_table_alone_on_stdout_and_its_notes_on_stderr() {
    let zk = ZkServer::start();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let ep = zk.endpoint();
    let a = rt.block_on(join(&ep, "/cron/jobs", "u1", "n1"));
    let home = common::scratch::tempdir();
    let args = ["--zk", ep.as_str(), "--prefix", "/cron"];
    let mut last = None;
    for _ in 0..3 {
        let out = common::electop::command(home.path())
            .args(args)
            .arg("status")
            .output()
            .expect("run electop status");
        assert!(out.status.success(), "{out:?}");
        last = Some(out);
    }
    let out = last.expect("three runs");
    let table = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "the header and one election:\n{table}");
    assert!(lines[0].starts_with("SOURCE"), "{table}");
    assert!(
        lines[1].contains("jobs") && lines[1].contains("n1"),
        "{table}"
    );
    let notes = String::from_utf8_lossy(&out.stderr);
    assert!(notes.contains("history since"), "{notes}");
    assert!(notes.contains("history not watched from"), "{notes}");
    drop(a);
}
