//! Each store's failures in its own words, through the real binary: a database port with
//! nothing listening is "connection refused" and ends `status` at once (not a timeout after
//! `--timeout`); a frozen etcd (SIGSTOP: it takes the connection but never answers) is "no
//! answer from HOST:PORT within N", never tonic's "Timeout expired (Cancelled)" or hyper's
//! "http2 error".

mod common;

use std::time::{Duration, Instant};

use common::electop::{Watch, command};
use common::process::signal;
use common::sqlstore::Store;
use common::{EtcdServer, T, free_port};

/// `status` against a database URL whose port has nothing listening: the exact line, at once.
fn refused(scheme: &str) {
    let port = free_port();
    let url = format!("{scheme}://u@127.0.0.1:{port}/db");
    let home = common::scratch::tempdir();
    let started = Instant::now();
    let out = command(home.path())
        .args(["--sql", &url, "--scheme", "sql-lease"])
        .args(["status", "--timeout", "20s"])
        .output()
        .expect("electop status");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "electop: cannot connect to {url}: connection refused; is the server running and reachable?"
        )
    );
    // A refusal is final for a one-shot read: not waited out until --timeout.
    assert!(took < Duration::from_secs(10), "{url}: took {took:?}");
}

#[test]
fn a_refused_postgres_says_refused_at_once() {
    refused("postgres");
}

#[test]
fn a_refused_mariadb_says_refused_at_once() {
    refused("mysql");
}

/// An etcd that is there but frozen, resumed (so it can be stopped) when the test ends.
struct Frozen<'a>(&'a EtcdServer);

impl<'a> Frozen<'a> {
    fn new(etcd: &'a EtcdServer) -> Frozen<'a> {
        signal("-STOP", &[etcd.server_pid()]);
        Frozen(etcd)
    }
}

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        signal("-CONT", &[self.0.server_pid()]);
    }
}

/// Words that are the client library's, not ours.
fn library_words(text: &str) -> bool {
    [
        "Cancelled",
        "Timeout expired",
        "http2 error",
        "h2 protocol",
        "Unavailable",
        "Unknown",
    ]
    .iter()
    .any(|w| text.contains(w))
}

#[test]
fn status_against_a_frozen_etcd_says_no_answer_in_the_json_and_on_stderr() {
    let etcd = EtcdServer::start();
    etcd.etcdctl(&["put", "/f/jobs", "node-a"]);
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    let home = common::scratch::tempdir();
    let ep = etcd.endpoint();
    let _frozen = Frozen::new(&etcd);
    let out = command(home.path())
        .args(["--etcd", &ep, "--prefix", "/f/"])
        .args(["--sql", &store.url(), "--scheme", "sql-lease"])
        .args(["status", "--json", "--timeout", "5s"])
        .output()
        .expect("electop status");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "one of two read: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let sources = v["sources"].as_array().expect("sources");
    let down = sources
        .iter()
        .find(|s| s["error"].is_string())
        .unwrap_or_else(|| panic!("no source with an error: {v:#}"));
    // Each connection attempt waits up to 2 s (so another member could be tried); the
    // connection's keep-alive pings may give up first.
    let exact = [
        format!("no answer from {ep} within 2s"),
        format!("no answer from {ep} to keep-alive pings within 1s"),
    ];
    let said = down["error"].as_str().unwrap_or_default().to_string();
    assert!(exact.contains(&said), "{v:#}");
    assert!(stderr.contains(&said), "{stderr}");
    assert!(!library_words(&stderr), "{stderr}");
}

#[test]
fn watch_says_no_answer_when_a_followed_etcd_freezes() {
    let etcd = EtcdServer::start();
    etcd.etcdctl(&["put", "/f/jobs", "node-a"]);
    let home = common::scratch::tempdir();
    let ep = etcd.endpoint();
    let mut watch = Watch::start(home.path(), &["--etcd", &ep, "--prefix", "/f/"]);
    watch.wait_synced(1);
    let frozen = Frozen::new(&etcd);
    let said = |v: &serde_json::Value| v["detail"].as_str().unwrap_or("").to_string();
    // Whichever gives up first is named: the connection's keep-alive pings, a request's
    // deadline, or the reconnection's.
    let exact = [
        format!("no answer from {ep} to keep-alive pings within 1s"),
        format!("no answer from {ep} within 2s"),
        format!("no answer from {ep} within 1.5s"),
        format!("no answer from {ep} within 5s"),
        // The watch stream, cut when the keep-alive gave up on the connection.
        format!("etcd {ep}: connection lost"),
    ];
    let first = watch.wait_for("disconnected", T, |v| v["kind"] == "disconnected");
    assert!(exact.contains(&said(&first)), "{:#?}", watch.seen);
    // An outage of 8 s: reconnections time out one after the other (the member takes the
    // connection and never answers), and the watch says none of them again.
    std::thread::sleep(std::time::Duration::from_secs(8));
    drop(frozen);
    let mut seen = std::mem::take(&mut watch.seen);
    watch.wait_for("connected again", T, |v| v["kind"] == "connected");
    seen.append(&mut watch.seen);
    watch.seen = seen;
    let outages = watch.seen.iter().filter(|v| v["kind"] == "disconnected");
    assert_eq!(outages.count(), 1, "one outage: {:#?}", watch.seen);
    for v in &watch.seen {
        assert!(!library_words(&v.to_string()), "{v}");
    }
}

/// A refused Redis beside a healthy etcd: each source's staleness is its own. `status`
/// waits for the Redis source until `--timeout` (it may still answer), and the etcd source,
/// read at once, is not made stale by that wait: fresh, its election too, the Redis source
/// down.
#[test]
fn a_refused_redis_leaves_a_healthy_etcd_fresh() {
    let etcd = EtcdServer::start();
    etcd.etcdctl(&["put", "/r/jobs", "node-a"]);
    let home = common::scratch::tempdir();
    let redis = format!("redis://127.0.0.1:{}", free_port());
    let out = command(home.path())
        .args(["--etcd", &etcd.endpoint(), "--prefix", "/r/"])
        .args(["--redis", &redis])
        .args(["status", "--json", "--timeout", "4s"])
        .output()
        .expect("electop status");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "one of two read: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let source = |id: &str| {
        v["sources"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["id"] == id))
            .unwrap_or_else(|| panic!("no source {id}: {v:#}"))
            .clone()
    };
    let (etcd1, redis1) = (source("etcd1"), source("redis1"));
    assert_eq!(etcd1["state"], "connected", "{v:#}");
    assert_eq!(etcd1["stale"], false, "the etcd source is fresh: {v:#}");
    assert_eq!(redis1["state"], "down", "{v:#}");
    let refused = redis1["error"].as_str().unwrap_or_default();
    assert!(refused.contains("connection refused"), "{v:#}");
    let elections = v["elections"].as_array().expect("elections");
    assert!(!elections.is_empty(), "{v:#}");
    for e in elections {
        assert_eq!(e["stale"], false, "{e:#}");
        assert!(!e["alarms"].to_string().contains("stale"), "{e:#}");
    }
}

/// `--etcd` pointed at a port where another server listens (Redis here): said to be no
/// etcd, at once and in the same words however the client library failed (an HTTP/2
/// protocol error, a cancelled call), never tonic's or h2's words.
#[test]
fn etcd_pointed_at_a_redis_port_says_the_server_is_not_etcd() {
    let redis = common::redis::RedisServer::start("", None);
    let ep = format!("127.0.0.1:{}", redis.port());
    let home = common::scratch::tempdir();
    let started = Instant::now();
    let out = command(home.path())
        .args(["--etcd", &ep, "status", "--timeout", "20s"])
        .output()
        .expect("electop status");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "electop: etcd {ep}: the server there did not answer as etcd: no HTTP/2 (gRPC) \
             handshake; it answered `-ERR unknown command"
        )) && first.ends_with("is this etcd's client port (2379)?"),
        "{stderr}"
    );
    assert!(!library_words(&stderr), "{stderr}");
    assert!(
        took < Duration::from_secs(10),
        "final at once, took {took:?}"
    );
}
