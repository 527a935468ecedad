//! Layout detection against a real etcd: election keys as the Node `etcd3` package writes
//! them (the lease id in decimal) are read as etcd's election API without `--scheme`; a
//! prefix with a typo says where the elections are; a prefix holding both layouts says so
//! and names the flag that settles it.

mod common;

use common::electop::{election, status};
use common::etcd::EtcdServer;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use serde_json::Value;

/// One campaigner as the Node `etcd3` package's `Election.campaign` writes it: a lease of
/// its own, then `election/<name>/<lease id in decimal>` = its proposal on that lease, only
/// if the key is new. Returns the lease.
async fn node_etcd3_campaign(client: &mut etcd_client::Client, name: &str, id: &str) -> i64 {
    let lease = client.lease_grant(30, None).await.expect("grant").id();
    let key = format!("election/{name}/{lease}");
    let txn = Txn::new()
        .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            key.as_str(),
            id,
            Some(PutOptions::new().with_lease(lease)),
        )]);
    assert!(client.txn(txn).await.expect("txn").succeeded(), "{key}");
    lease
}

/// `status --json`: the JSON and what went to stderr; it must succeed.
fn status_and_stderr(home: &std::path::Path, args: &[&str]) -> (Value, String) {
    let out = status(home, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "status failed: {}\n{err}", out.status);
    let json = serde_json::from_slice(&out.stdout).expect("status prints JSON");
    (json, err)
}

fn ids(e: &Value) -> Vec<&str> {
    e["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| c["id"].as_str().unwrap_or("?"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn node_etcd3_elections_are_detected_and_a_wrong_prefix_says_where_they_are() {
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    let first = node_etcd3_campaign(&mut client, "jobs", "node-a").await;
    assert_ne!(
        format!("{first}"),
        format!("{first:x}"),
        "the decimal id must not also read as hex"
    );
    for id in ["node-b", "node-c"] {
        node_etcd3_campaign(&mut client, "jobs", id).await;
    }
    node_etcd3_campaign(&mut client, "web", "web-1").await;
    let h = tempfile::tempdir().expect("tempdir");
    let ep = etcd.endpoint();

    let (s, err) = status_and_stderr(h.path(), &["--etcd", &ep, "--prefix", "election/"]);
    let e = election(&s, "jobs");
    assert_eq!(e["scheme"], "etcd-election", "detected: {e:#}");
    assert_eq!(e["leader"]["id"], "node-a");
    assert_eq!(e["leader"]["lease"], first);
    assert_eq!(ids(e), ["node-a", "node-b", "node-c"]);
    assert!(e["ttl_ms"].as_i64().is_some_and(|t| t > 20_000), "{e:#}");
    assert_eq!(election(&s, "web")["leader"]["id"], "web-1");
    assert!(err.is_empty(), "a sure layout needs no notice: {err}");
    assert_eq!(s["sources"][0].get("layout_notice"), None, "{s:#}");

    // A leading slash too many: nothing there, and the hint says where to look.
    let (s, err) = status_and_stderr(h.path(), &["--etcd", &ep, "--prefix", "/election/"]);
    assert_eq!(s["elections"], Value::Array(Vec::new()));
    let hint = "no keys under /election/; 2 elections under election/";
    assert!(err.contains(hint), "stderr: {err}");
    assert!(
        s["sources"][0]["layout_notice"]
            .as_str()
            .is_some_and(|n| n.contains(hint)),
        "{s:#}"
    );

    // A lease key beside the election keys: both layouts, reported with the flag.
    let lease = client.lease_grant(30, None).await.expect("grant").id();
    client
        .put(
            "election/leader",
            "node-x",
            Some(PutOptions::new().with_lease(lease)),
        )
        .await
        .expect("put");
    let (s, err) = status_and_stderr(h.path(), &["--etcd", &ep, "--prefix", "election/"]);
    for want in [
        "layout unsure",
        "4 key(s) named after their own lease",
        "1 other key(s) on a lease",
        "--scheme etcd-lease-key",
    ] {
        assert!(err.contains(want), "`{want}` missing from stderr: {err}");
    }
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-a", "{s:#}");
    // The flag settles it: no notice.
    let (_, err) = status_and_stderr(
        h.path(),
        &[
            "--etcd",
            &ep,
            "--prefix",
            "election/",
            "--scheme",
            "etcd-election",
        ],
    );
    assert!(err.is_empty(), "{err}");
}
