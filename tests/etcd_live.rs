//! electop against a real etcd started by the harness: `status --json` and `watch --json`
//! for both etcd schemes, leader changes by resignation, lease revocation and lease expiry,
//! history replay and compaction, reconnects, and bad input.

mod common;

use std::time::Duration;

use common::electop::{Watch, election, status_history_json, status_json};
use common::etcd::{Campaigner, EtcdServer, campaign_in_order};
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use futures::StreamExt;
use serde_json::Value;

use common::T;

fn home() -> common::scratch::Scratch {
    common::scratch::tempdir()
}

fn ids(e: &Value) -> Vec<String> {
    e["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| c["id"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The lease-key scheme's acquire: put the key with our lease only if nobody holds it.
async fn acquire(client: &mut etcd_client::Client, key: &str, id: &str, lease: i64) -> bool {
    let txn = Txn::new()
        .when([Compare::version(key, CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            key,
            id,
            Some(PutOptions::new().with_lease(lease)),
        )])
        .or_else([TxnOp::get(key, None)]);
    client.txn(txn).await.expect("txn").succeeded()
}

#[test]
fn election_api_shows_leader_and_line_in_order() {
    let etcd = EtcdServer::start();
    let _line = campaign_in_order(&etcd, "/el/jobs", ["node-a", "node-b", "node-c"]);

    let h = home();
    let s = status_history_json(h.path(), &["--etcd", &etcd.endpoint(), "--prefix", "/el/"]);
    let e = election(&s, "jobs");
    assert_eq!(e["scheme"], "etcd-election", "scheme detected: {e:#}");
    assert_eq!(e["leader"]["id"], "node-a");
    assert_eq!(ids(e), ["node-a", "node-b", "node-c"]);
    let ttl = e["ttl_ms"].as_i64().expect("leader ttl");
    assert!(
        ttl > 50_000 && ttl <= 60_000,
        "etcdctl elect's 60 s lease: {ttl}"
    );
    for c in e["candidates"].as_array().expect("candidates") {
        assert!(c["lease"].as_i64().unwrap_or(0) != 0, "{c}");
        assert!(c["ttl_ms"].as_i64().unwrap_or(0) > 0, "{c}");
    }
    assert_eq!(e["transitions"], 1);
    assert_eq!(e["zombie"], false);
    assert_eq!(e["source"], format!("etcd {} /el/", etcd.endpoint()));
    // The snapshot was a quorum read: the state is as of then, and says so.
    let as_of = s["sources"][0]["as_of"].as_str().expect("as_of");
    assert_eq!(e["as_of"].as_str(), Some(as_of));
    assert_eq!(e["stale"], false);
}

#[test]
fn resignation_hands_over_and_is_seen_live() {
    let etcd = EtcdServer::start();
    let [mut a, mut b] = campaign_in_order(&etcd, "/el/jobs", ["node-a", "node-b"]);

    let h = home();
    let args = [
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        "/el/",
        "--scheme",
        "etcd-election",
    ];
    let mut watch = Watch::start(h.path(), &args);
    watch.wait_synced(1);
    a.resign();
    assert!(b.wait_elected(T), "node-b takes over");
    let ev = watch.wait_for("leader change", T, |v| v["kind"] == "leader_changed");
    assert_eq!(ev["election"], "jobs");
    assert_eq!(ev["from"], "node-a");
    assert_eq!(ev["to"], "node-b");
    assert_eq!(
        ev["cause"], "resigned",
        "key deleted while its lease lives: {ev}"
    );
    assert!(
        ev["at"].as_str().is_some_and(|t| t.contains('T')),
        "RFC 3339 time: {ev}"
    );
    watch.wait_for("candidate left", T, |v| {
        v["kind"] == "candidate_left" && v["from"] == "node-a"
    });

    let s = status_history_json(h.path(), &args);
    let e = election(&s, "jobs");
    assert_eq!(e["leader"]["id"], "node-b");
    let last = e["history"]
        .as_array()
        .and_then(|h| h.last())
        .expect("history");
    assert_eq!(last["from"], "node-a");
    assert_eq!(last["to"], "node-b");
    assert_eq!(last["cause"], "resigned");
    // etcdctl elect's Ctrl-C deleted its own key and left its lease to expire: it knows it
    // left. Shown as resigned with its lingering lease, never as a deposed alarm.
    assert!(e["deposed"].is_null(), "no false alarm: {e:#}");
    assert_eq!(e["resigned"]["id"], "node-a", "{e:#}");
    assert!(
        e["resigned"]["ttl_ms"].as_i64().is_some_and(|t| t > 0),
        "{e:#}"
    );
    assert!(!e["alarms"].to_string().contains("deposed"), "{e:#}");
    let plain = common::electop::status_json(h.path(), &args);
    let e = election(&plain, "jobs");
    assert!(e["deposed"].is_null(), "plain status agrees: {e:#}");
    assert!(!e["alarms"].to_string().contains("deposed"), "{e:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn lease_key_revoke_and_expiry_are_told_apart() {
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    let long = client.lease_grant(30, None).await.expect("grant").id();
    assert!(acquire(&mut client, "/lk/billing", "node-b", long).await);
    let short = client.lease_grant(2, None).await.expect("grant").id();
    assert!(acquire(&mut client, "/lk/reports", "node-c", short).await);
    let other = client.lease_grant(30, None).await.expect("grant").id();
    assert!(
        !acquire(&mut client, "/lk/billing", "node-x", other).await,
        "held: the txn fails"
    );

    let h = home();
    let args = ["--etcd", &etcd.endpoint(), "--prefix", "/lk/"];
    let mut watch = Watch::start(h.path(), &args);
    watch.wait_synced(1);
    let s = status_json(h.path(), &args);
    let billing = election(&s, "billing");
    assert_eq!(
        billing["scheme"], "etcd-lease-key",
        "scheme detected: {billing:#}"
    );
    assert_eq!(billing["leader"]["id"], "node-b");
    assert_eq!(billing["leader"]["lease"], long);
    // The id a script reads is one etcdctl takes back: hex, a string jq does not round.
    let hex = billing["leader"]["lease_hex"].as_str().expect("lease_hex");
    assert_eq!(hex, format!("{long:x}"), "{billing:#}");
    etcd.etcdctl(&["lease", "revoke", hex]);
    let ev = watch.wait_for("billing lost", T, |v| {
        v["kind"] == "leader_lost" && v["election"] == "billing"
    });
    assert_eq!(ev["cause"], "lease_revoked", "{ev}");
    assert_eq!(ev["from"], "node-b");

    let ev = watch.wait_for("reports expired", T, |v| {
        v["kind"] == "leader_lost" && v["election"] == "reports"
    });
    assert_eq!(ev["cause"], "lease_expired", "{ev}");

    // A new leader takes the free key: elected.
    let fresh = client.lease_grant(30, None).await.expect("grant").id();
    assert!(acquire(&mut client, "/lk/billing", "node-x", fresh).await);
    let ev = watch.wait_for("billing elected", T, |v| {
        v["kind"] == "leader_elected" && v["election"] == "billing"
    });
    assert_eq!(ev["to"], "node-x");
    // Someone overwrites the key: taken over.
    client
        .put(
            "/lk/billing",
            "node-y",
            Some(PutOptions::new().with_lease(fresh)),
        )
        .await
        .expect("put");
    let ev = watch.wait_for("billing taken", T, |v| {
        v["kind"] == "leader_changed" && v["election"] == "billing"
    });
    assert_eq!(
        (ev["from"].clone(), ev["to"].clone(), ev["cause"].clone()),
        ("node-x".into(), "node-y".into(), "taken_over".into())
    );

    let s = status_history_json(h.path(), &args);
    let causes: Vec<_> = election(&s, "billing")["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|h| h["cause"].as_str().unwrap_or("?").to_string())
        .collect();
    // Replayed by the new process, where revocation and expiry look alike; the watch beside
    // it saw the revocation live and recorded it: both name it the same.
    assert_eq!(
        causes,
        ["elected", "lease_revoked", "elected", "taken_over"]
    );
    assert_eq!(election(&s, "reports")["leader"], Value::Null);
    assert_eq!(election(&s, "reports")["ttl_ms"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn registry_lists_the_candidates_leader_first() {
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    let mut leases = Vec::new();
    for id in ["node-a", "node-b", "node-c"] {
        let l = client.lease_grant(30, None).await.expect("grant").id();
        client
            .put(
                format!("/reg/billing/{id}"),
                "10.0.0.1",
                Some(PutOptions::new().with_lease(l)),
            )
            .await
            .expect("register");
        leases.push(l);
    }
    assert!(acquire(&mut client, "/lead/billing", "node-b", leases[1]).await);
    let h = home();
    let s = status_json(
        h.path(),
        &[
            "--etcd",
            &etcd.endpoint(),
            "--prefix",
            "/lead/",
            "--scheme",
            "etcd-lease-key",
            "--registry",
            "/reg/",
        ],
    );
    let e = election(&s, "billing");
    assert_eq!(ids(e), ["node-b", "node-a", "node-c"]);
    assert_eq!(e["candidates"][1]["lease"], leases[0]);
}

#[test]
fn history_is_replayed_from_past_revisions() {
    let etcd = EtcdServer::start();
    let [mut a, mut b] = campaign_in_order(&etcd, "/hist/jobs", ["node-a", "node-b"]);
    a.resign();
    assert!(b.wait_elected(T));
    let mut c = Campaigner::start(&etcd, "/hist/jobs", "node-c");
    common::wait_until("node-c in line", T, || {
        etcd.candidates("/hist/jobs").len() == 2
    });
    b.resign();
    assert!(c.wait_elected(T));

    let h = home();
    let s = status_history_json(
        h.path(),
        &["--etcd", &etcd.endpoint(), "--prefix", "/hist/"],
    );
    let e = election(&s, "jobs");
    let hist: Vec<(Value, Value, Value)> = e["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|h| (h["from"].clone(), h["to"].clone(), h["cause"].clone()))
        .collect();
    assert_eq!(
        hist,
        [
            (Value::Null, "node-a".into(), "elected".into()),
            ("node-a".into(), "node-b".into(), "resigned".into()),
            ("node-b".into(), "node-c".into(), "resigned".into()),
        ]
    );
    assert!(
        e["history"][0]["at"].is_null(),
        "replayed changes have no wall-clock time"
    );
    assert!(e["history"][1]["revision"].as_i64().unwrap_or(0) > 0);
    assert_eq!(e["transitions"], 3);

    // Without --history, status reads the current state only: no replay to wait for.
    let s = status_json(
        h.path(),
        &["--etcd", &etcd.endpoint(), "--prefix", "/hist/"],
    );
    let e = election(&s, "jobs");
    assert_eq!(e["leader"]["id"], "node-c");
    assert_eq!(e["history"].as_array().map(Vec::len), Some(0), "{e:#}");

    // The limit bounds what is kept.
    let s = status_json(
        h.path(),
        &[
            "--etcd",
            &etcd.endpoint(),
            "--prefix",
            "/hist/",
            "--history-limit",
            "2",
        ],
    );
    let e = election(&s, "jobs");
    assert_eq!(e["history"].as_array().map(Vec::len), Some(2));
    assert_eq!(e["history"][0]["to"], "node-b");
}

#[test]
fn compacted_history_is_said_and_the_snapshot_still_shown() {
    let etcd = EtcdServer::start();
    let [mut a, mut b] = campaign_in_order(&etcd, "/cmp/jobs", ["node-a", "node-b"]);
    a.resign();
    assert!(b.wait_elected(T));
    etcd.etcdctl(&["put", "/other/x", "y"]);
    let rev = etcd.etcdctl_stdout(&["get", "/other/x", "-w", "json"]);
    let rev: Value = serde_json::from_str(&rev).expect("json");
    let rev = rev["header"]["revision"].as_i64().expect("revision");
    etcd.etcdctl(&["compact", &rev.to_string()]);

    let h = home();
    let s = status_history_json(h.path(), &["--etcd", &etcd.endpoint(), "--prefix", "/cmp/"]);
    let notice = s["sources"][0]["notice"].as_str().unwrap_or_default();
    assert!(
        notice.contains(&format!("revision {rev}")) && notice.contains("compacted"),
        "{s:#}"
    );
    let e = election(&s, "jobs");
    assert_eq!(e["leader"]["id"], "node-b");
    assert_eq!(
        e["history"].as_array().map(Vec::len),
        Some(0),
        "nothing before the compaction: {e:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reconnects_after_a_restart_and_loses_no_event() {
    let mut etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    let lease = client.lease_grant(60, None).await.expect("grant").id();
    assert!(acquire(&mut client, "/rc/a", "one", lease).await);
    let h = home();
    let args = [
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        "/rc/",
        "--scheme",
        "etcd-lease-key",
    ];
    let mut watch = Watch::start(h.path(), &args);
    watch.wait_synced(1);

    etcd.stop();
    watch.wait_for("disconnected", T, |v| v["kind"] == "disconnected");
    etcd.restart();
    // Changes made as soon as etcd is back, before electop's retry: they must still arrive.
    let mut client = etcd.client().await;
    for (i, id) in ["two", "three", "four"].iter().enumerate() {
        client
            .put("/rc/a", *id, Some(PutOptions::new().with_lease(lease)))
            .await
            .expect("put");
        client
            .put(format!("/rc/new{i}"), *id, None)
            .await
            .expect("put");
    }
    let changes: Vec<Value> = (0..3)
        .map(|i| {
            let to = ["two", "three", "four"][i];
            watch.wait_for("taken over", T, |v| {
                v["kind"] == "leader_changed" && v["to"] == to
            })
        })
        .collect();
    assert_eq!(changes[0]["from"], "one");
    assert_eq!(changes[2]["from"], "three");
    for i in 0..3 {
        let name = format!("new{i}");
        watch.wait_for("new election", T, |v| {
            v["kind"] == "leader_elected" && v["election"] == name.as_str()
        });
    }
    let connected = watch
        .seen
        .iter()
        .filter(|v| v["kind"] == "connected")
        .count();
    assert!(
        connected >= 2,
        "connected again after the restart: {:#?}",
        watch.seen
    );
}

#[test]
fn unreachable_store_exits_1_with_one_line() {
    let port = common::free_port();
    let h = home();
    let endpoint = format!("127.0.0.1:{port}");
    let started = std::time::Instant::now();
    let out = common::electop::command(h.path())
        .args(["--etcd", &endpoint, "status", "--json", "--timeout", "1s"])
        .output()
        .expect("run electop");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(&endpoint), "names the endpoint: {err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "honours --timeout"
    );
    assert!(out.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn zombies_non_utf8_and_huge_values() {
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    // A candidate key without a lease: it never expires and blocks everyone behind it.
    client
        .put("/z/stuck/1", "old-node", None)
        .await
        .expect("put");
    let lease = client.lease_grant(30, None).await.expect("grant").id();
    client
        .put(
            format!("/z/stuck/{lease:x}"),
            "live-node",
            Some(PutOptions::new().with_lease(lease)),
        )
        .await
        .expect("put");
    client
        .put(
            b"/z/bin\xff/abc".to_vec(),
            b"id-\xfe\x01".to_vec(),
            Some(PutOptions::new().with_lease(lease)),
        )
        .await
        .expect("put");
    let huge = "v".repeat(1_000_000);
    client
        .put(
            "/z/huge/1",
            huge.clone(),
            Some(PutOptions::new().with_lease(lease)),
        )
        .await
        .expect("put");

    let h = home();
    let s = status_json(
        h.path(),
        &[
            "--etcd",
            &etcd.endpoint(),
            "--prefix",
            "/z/",
            "--scheme",
            "etcd-election",
        ],
    );
    let stuck = election(&s, "stuck");
    assert_eq!(stuck["leader"]["id"], "old-node");
    assert_eq!(stuck["leader"]["zombie"], true);
    assert_eq!(stuck["zombie"], true);
    assert_eq!(stuck["ttl_ms"], Value::Null, "no lease, no countdown");
    assert_eq!(ids(stuck), ["old-node", "live-node"]);
    let bin = election(&s, "bin\\xff");
    assert_eq!(bin["leader"]["id"], "id-\\xfe\\u{1}");
    assert_eq!(
        election(&s, "huge")["leader"]["id"].as_str().map(str::len),
        Some(1_000_000)
    );
}

/// etcd with authentication on: a user and a password from the environment or a file; a
/// wrong password is named as such and never shown; the participants log in too.
#[tokio::test(flavor = "multi_thread")]
async fn etcd_with_authentication() {
    let etcd = EtcdServer::start();
    etcd.etcdctl(&["user", "add", "root:r00t-Secret"]);
    etcd.etcdctl(&["auth", "enable"]);
    let admin = ["--user", "root:r00t-Secret"];
    let ctl = |args: &[&str]| {
        let all: Vec<&str> = admin.iter().chain(args.iter()).copied().collect();
        etcd.etcdctl(&all)
    };
    ctl(&["put", "/auth/leader/jobs", "node-a"]);

    let h = home();
    let pw_file = h.path().join("pw");
    std::fs::write(&pw_file, "r00t-Secret\n").expect("pw");
    let pw = pw_file.display().to_string();
    let base = [
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        "/auth/leader/",
        "--scheme",
        "etcd-lease-key",
        "--user",
        "root",
    ];
    let with_file: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--password-file", pw.as_str()])
        .collect();
    let s = status_json(h.path(), &with_file);
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-a");

    let out = common::electop::command(h.path())
        .env("ETCD_PW", "not-the-password")
        .args(base)
        .args([
            "--password-env",
            "ETCD_PW",
            "status",
            "--json",
            "--timeout",
            "2s",
        ])
        .output()
        .expect("electop");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("authentication failed"), "{err}");
    assert!(
        !err.contains("not-the-password") && !err.contains("r00t-Secret"),
        "{err}"
    );

    let out = common::electop::command(h.path())
        .args(base)
        .args(["status", "--timeout", "2s"])
        .output()
        .expect("electop");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs a password"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A participant logs in the same way and takes part.
    let mut node = common::electop::command(h.path())
        .args([
            "--etcd",
            &etcd.endpoint(),
            "--prefix",
            "/auth/el/",
            "--scheme",
            "etcd-election",
            "--user",
            "root",
            "--password-file",
            pw.as_str(),
        ])
        .args([
            "node",
            "--election",
            "jobs",
            "--id",
            "node-z",
            "--json",
            "--ttl",
            "2s",
            "--renew",
            "500ms",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("node");
    common::wait_until("the node leads", T, || {
        ctl(&["get", "--prefix", "/auth/el/jobs/", "--print-value-only"])
            .stdout
            .starts_with(b"node-z")
    });
    let _ = node.kill();
    let _ = node.wait();
}

/// More than gRPC's default 4 MiB under one prefix, and more than electop's own 64 MiB
/// response limit: `status` reads the prefix whole, and when etcd's answer is too large to
/// decode, in pages at one revision; no key is lost either way.
#[tokio::test(flavor = "multi_thread")]
async fn a_prefix_over_the_response_limits_is_read_in_pages() {
    use etcd_client::{Txn, TxnOp};
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    let value = "x".repeat(200);
    const N: usize = 25_000;
    for chunk in (0..N).collect::<Vec<_>>().chunks(100) {
        let ops: Vec<TxnOp> = chunk
            .iter()
            .map(|i| TxnOp::put(format!("/big/e{i:05}"), format!("{value}{i}"), None))
            .collect();
        client.txn(Txn::new().and_then(ops)).await.expect("txn");
    }
    let h = home();
    // 70 MB through one etcd: more than the default 5 s on a loaded two-core machine.
    let read = |args: &[&str]| -> Value {
        let out = common::electop::command(h.path())
            .args(args)
            .args(["status", "--json", "--timeout", "30s"])
            .output()
            .expect("electop status");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let args = [
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        "/big/",
        "--scheme",
        "etcd-lease-key",
        "--history-limit",
        "0",
    ];
    let s = read(&args);
    let elections = s["elections"].as_array().expect("elections");
    assert_eq!(elections.len(), N, "every key, none lost");
    let last = election(&s, &format!("e{:05}", N - 1));
    assert_eq!(last["leader"]["id"], format!("{value}{}", N - 1));
    // 50 values of 1.4 MB (etcd takes 1.5 MiB a request): 70 MB, over the 64 MiB limit.
    let large = "y".repeat(1_400_000);
    for i in 0..50 {
        client
            .put(format!("/big/z{i:02}"), format!("{large}{i}"), None)
            .await
            .expect("put");
    }
    let s = read(&args);
    let elections = s["elections"].as_array().expect("elections");
    assert_eq!(
        elections.len(),
        N + 50,
        "every key, none lost between pages"
    );
    let id = election(&s, "z49")["leader"]["id"].as_str().map(str::len);
    assert_eq!(id, Some(1_400_002), "the whole value of the last large key");
}

/// Changes an electop saw live keep their wall-clock time on disk (per cluster), so a later
/// one shows times for them; only what nobody saw live is dated by revision alone.
#[test]
fn times_seen_live_survive_for_the_next_electop() {
    let etcd = EtcdServer::start();
    etcd.etcdctl(&["put", "/tm/jobs", "node-0"]);
    let h = home();
    let args = [
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        "/tm/",
        "--scheme",
        "etcd-lease-key",
    ];
    let mut watch = Watch::start(h.path(), &args);
    watch.wait_synced(1);
    for id in ["node-1", "node-2"] {
        etcd.etcdctl(&["put", "/tm/jobs", id]);
        watch.wait_for("the change", T, |v| v["to"] == id);
    }
    drop(watch);
    let s = common::electop::status_history_json(h.path(), &args);
    let history: Vec<(Value, Value)> = election(&s, "jobs")["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|e| (e["to"].clone(), e["at"].clone()))
        .collect();
    assert_eq!(history.len(), 3, "{history:?}");
    assert_eq!(
        history[0],
        ("node-0".into(), Value::Null),
        "never seen live"
    );
    for (to, at) in &history[1..] {
        assert!(at.as_str().is_some_and(|t| t.contains('T')), "{to}: {at}");
    }
}

/// `n` leases of 10 minutes.
async fn grant(client: &etcd_client::Client, n: usize) -> Vec<i64> {
    let grants = (0..n).map(|_| {
        let mut c = client.clone();
        async move { c.lease_grant(600, None).await.expect("grant").id() }
    });
    futures::stream::iter(grants).buffered(32).collect().await
}

/// Puts the key and value `kv(n, lease)` on the `n`th of `leases`, 100 to a txn.
async fn put_on_leases(
    client: &etcd_client::Client,
    leases: &[i64],
    kv: impl Fn(usize, i64) -> (String, String),
) {
    for (chunk, ids) in leases.chunks(100).enumerate() {
        let ops: Vec<TxnOp> = ids
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let (key, value) = kv(chunk * 100 + i, *l);
                TxnOp::put(key, value, Some(PutOptions::new().with_lease(*l)))
            })
            .collect();
        client
            .clone()
            .txn(Txn::new().and_then(ops))
            .await
            .expect("txn");
    }
}

/// One lease per election, more than can be read one round trip each within a short
/// --timeout on a busy machine: status still prints every election in time, with the TTLs it
/// read by then.
#[tokio::test(flavor = "multi_thread")]
async fn status_prints_in_time_however_many_leases() {
    const N: usize = 3_000;
    let etcd = EtcdServer::start();
    let client = etcd.client().await;
    let leases = grant(&client, N).await;
    put_on_leases(&client, &leases, |n, _| {
        (format!("/many/e{n:05}"), format!("node-{n}"))
    })
    .await;
    let h = home();
    let started = std::time::Instant::now();
    let out = common::electop::command(h.path())
        .args(["--etcd", &etcd.endpoint(), "--prefix", "/many/"])
        .args([
            "--scheme",
            "etcd-lease-key",
            "status",
            "--json",
            "--timeout",
            "1s",
        ])
        .output()
        .expect("electop");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "within --timeout"
    );
    let s: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(s["elections"].as_array().map(Vec::len), Some(N));
    // Leases not read in time are unknown, and said so with their number.
    let unknown = s["elections"]
        .as_array()
        .expect("elections")
        .iter()
        .filter(|e| e["ttl_ms"].is_null())
        .count();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if unknown > 0 {
        let note = format!("{unknown} of {N} leases not read within half the 1s timeout");
        assert!(stderr.contains(&note), "{unknown} unknown TTLs: {stderr}");
        assert_eq!(
            s["sources"][0]["notice"]
                .as_str()
                .map(|n| n.contains(&note)),
            Some(true)
        );
    } else {
        assert!(!stderr.contains("not read"), "{stderr}");
    }
}

/// When `status` cannot read every lease in time, the leaders' leases are read first: a
/// table's TTL column is the leader's. etcd is behind a proxy that delays every chunk by
/// 40 ms each way, so 64 reads in flight take at least 80 ms a round and the budget (half of
/// a 2 s --timeout) cannot read even the 1,000 leaders' leases, on any machine.
#[tokio::test(flavor = "multi_thread")]
async fn status_reads_the_leaders_leases_first() {
    const N: usize = 1_000;
    let etcd = EtcdServer::start();
    let client = etcd.client().await;
    let leases = grant(&client, 2 * N).await;
    // Leaders in earlier txns than followers: the election API's line is creation order.
    for (turn, ids) in [&leases[..N], &leases[N..]].into_iter().enumerate() {
        put_on_leases(&client, ids, |n, l| {
            (format!("/line/e{n:04}/{l:x}"), format!("node-{turn}"))
        })
        .await;
    }
    let proxy = common::proxy::Proxy::start(etcd.client_port(), Duration::from_secs(60));
    proxy.delay_both(Duration::from_millis(40), Duration::from_millis(40));
    let h = home();
    let out = common::electop::command(h.path())
        .args(["--etcd", &format!("127.0.0.1:{}", proxy.port())])
        .args(["--prefix", "/line/", "--scheme", "etcd-election"])
        .args(["status", "--json", "--timeout", "2s"])
        .output()
        .expect("electop");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let s: Value = serde_json::from_slice(&out.stdout).expect("json");
    let elections = s["elections"].as_array().expect("elections");
    assert_eq!(elections.len(), N);
    let read = |i: usize| {
        elections
            .iter()
            .filter(|e| !e["candidates"][i]["ttl_ms"].is_null())
            .count()
    };
    let (leaders, followers) = (read(0), read(1));
    assert!(
        stderr.contains("leases not read"),
        "the budget ran out: {stderr}"
    );
    // Only the first 64 reads start before the elections are known.
    assert!(
        followers <= 64 && leaders > followers,
        "TTLs read: {leaders} leaders, {followers} followers"
    );
}

/// A first frame must not wait for 100,000 elections to be read and derived: elections of
/// the first 2,000 keys arrive before the whole prefix is loaded (while the source is still
/// not shown as connected, with how far the read got), and once loaded the full snapshot
/// holds every election, none previewed that is not in it. With the scheme configured the
/// first page is shown as it arrives; with it detected (which takes every key), the first
/// keys are shown as soon as the read ends, before the rest are derived.
#[tokio::test(flavor = "multi_thread")]
async fn the_first_snapshot_is_shown_before_it_is_loaded() {
    const N: usize = 5_000;
    let etcd = EtcdServer::start();
    let client = etcd.client().await;
    for chunk in (0..N).collect::<Vec<_>>().chunks(128) {
        let ops: Vec<TxnOp> = chunk
            .iter()
            .map(|i| TxnOp::put(format!("/pages/e{i:05}"), format!("node-{i}"), None))
            .collect();
        client
            .clone()
            .txn(Txn::new().and_then(ops))
            .await
            .expect("txn");
    }
    let endpoint = etcd.endpoint();
    for (scheme, first_loading) in [(Some("etcd-lease-key"), (2_000, N)), (None, (N, N))] {
        let mut args = vec!["electop", "--etcd", &endpoint, "--prefix", "/pages/"];
        args.extend(scheme.iter().flat_map(|s| ["--scheme", s]));
        let (loading, before_connected, after) = first_snapshot(&args, N).await;
        let how = format!("scheme {scheme:?}");
        assert_eq!(loading.first(), Some(&first_loading), "{how}: {loading:?}");
        assert_eq!(loading.last(), Some(&(N, N)), "{how}: {loading:?}");
        assert!(
            before_connected.len() >= 1_999 && before_connected.len() < N,
            "{how}: shown before the whole load: {} elections",
            before_connected.len()
        );
        assert!(before_connected.is_subset(&after), "{how}");
        assert!(
            after.contains("e04999") && after.contains("e00000"),
            "{how}"
        );
    }
}

type Names = std::collections::BTreeSet<String>;

/// Runs a source on `args` until `n` elections came after it connected: how far the read
/// got each time it said, and the elections shown before and after it connected.
async fn first_snapshot(args: &[&str], n: usize) -> (Vec<(usize, usize)>, Names, Names) {
    use electop::model::{ConnState, SourceEvent};
    let cli = <electop::cli::Cli as clap::Parser>::parse_from(args);
    let sources = cli
        .sources
        .resolve(&electop::config::Config::default())
        .expect("sources");
    let opts = electop::backend::BackendOptions {
        history_limit: 0,
        ..Default::default()
    };
    let mut s = electop::runtime::Sources::spawn(&sources, &opts).expect("spawn");
    let (mut before_connected, mut after) = (Names::new(), Names::new());
    let mut loading = Vec::new();
    let mut connected = false;
    let deadline = tokio::time::Instant::now() + T;
    while after.len() < n {
        let ev = tokio::time::timeout_at(deadline, s.events.recv())
            .await
            .expect("every election within 10 s")
            .expect("source alive");
        match ev {
            SourceEvent::Loading { read, total, .. } => loading.push((read, total)),
            SourceEvent::Conn {
                state: ConnState::Connected,
                ..
            } => connected = true,
            SourceEvent::Elections { elections, .. } => {
                let names = elections.into_iter().map(|e| e.name);
                if connected {
                    after.extend(names);
                } else {
                    before_connected.extend(names);
                }
            }
            _ => {}
        }
    }
    s.shutdown().await;
    (loading, before_connected, after)
}

/// A member whose answers come late, not never: the network to it stops for longer than a
/// reader's keep-alive waits for a ping and than the probe waits for one answer, then goes
/// on. Asked again, the member answers, so it was never down: no `member_down`, which an
/// operator pages on. (Before, the probe called it down, `connection lost` on a connection
/// closed under it, and up again two seconds later.)
#[test]
fn a_member_that_answers_late_is_not_called_down() {
    let etcd = EtcdServer::start();
    etcd.etcdctl(&["put", "/late/jobs", "node-a"]);
    let proxy = common::proxy::Proxy::start(etcd.client_port(), Duration::from_secs(120));
    let h = home();
    let ep = format!("127.0.0.1:{}", proxy.port());
    let mut watch = Watch::start(h.path(), &["--etcd", &ep, "--prefix", "/late/"]);
    watch.wait_synced(1);
    for _ in 0..3 {
        proxy.freeze();
        watch.collect_for(Duration::from_millis(1600));
        proxy.thaw();
        // Two probe rounds after the thaw: each finds its kept connection closed.
        watch.collect_for(Duration::from_millis(4500));
    }
    let member: Vec<_> = watch
        .seen
        .iter()
        .filter(|v| v["kind"] == "member_down" || v["kind"] == "member_up")
        .collect();
    assert!(member.is_empty(), "{member:#?}");
    etcd.etcdctl(&["put", "/late/jobs", "node-b"]);
    watch.wait_for("live changes after", T, |v| v["to"] == "node-b");
}
