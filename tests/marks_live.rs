//! The timeline's marks survive a restart on etcd and ZooKeeper as on SQL and Redis: an
//! outage a `watch` saw (the server frozen by SIGSTOP until the watch says it down, then
//! resumed) is in the journal that source's task opened (etcd's is named by the cluster's
//! id, ZooKeeper's by its connect string), so a later `electop history --json`, the watch
//! gone, shows it at the times the freeze says.

mod common;

use std::time::{Duration, SystemTime};

use common::electop::Watch;
use common::process::signal;
use common::zookeeper::ZkServer;
use common::{EtcdServer, T};
use zookeeper_client::{Acls, Client, CreateMode};

/// The server frozen (`freeze`) until `watch` says it down, thawed (even if it never
/// does), seen connected again; the watch stopped cleanly. When it froze and resumed.
fn outage_watched(
    mut watch: Watch,
    freeze: impl FnOnce(),
    thaw: impl FnOnce(),
) -> (SystemTime, SystemTime) {
    let frozen = SystemTime::now();
    freeze();
    let down = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        watch.wait_for("the source down", T, |v| v["kind"] == "disconnected");
    }));
    thaw();
    let resumed = SystemTime::now();
    if let Err(e) = down {
        std::panic::resume_unwind(e);
    }
    watch.wait_for("the source connected again", T, |v| {
        v["kind"] == "connected"
    });
    assert!(watch.terminate().success());
    (frozen, resumed)
}

/// etcd frozen until its keep-alive pings give up: the watch says it down, then connected again; it
/// stops cleanly; `history` shows the outage, read from etcd's journal (named by cluster).
#[test]
fn an_etcd_outage_an_earlier_watch_saw_is_in_a_later_history() {
    let etcd = EtcdServer::start();
    etcd.etcdctl(&["put", "/m/jobs", "node-a"]);
    let home = common::scratch::tempdir();
    let ep = etcd.endpoint();
    let source = ["--etcd", ep.as_str(), "--prefix", "/m/"];
    let mut watch = Watch::start(home.path(), &source);
    watch.wait_synced(1);
    let pid = [etcd.server_pid()];
    let (frozen, resumed) =
        outage_watched(watch, || signal("-STOP", &pid), || signal("-CONT", &pid));
    // Its contacts come each heartbeat (500 ms); a reconnection is retried within 5 s.
    let beat = Duration::from_millis(500);
    common::outage::in_a_later_history(
        home.path(),
        &source,
        (frozen, beat),
        (resumed, Duration::from_secs(5)),
    );
}

/// A candidate's session with its ephemeral sequential node, kazoo's way.
async fn join(endpoint: &str, election: &str, id: &str) -> Client {
    let connect = Client::connector()
        .with_session_timeout(Duration::from_secs(30))
        .connect(endpoint);
    let client = tokio::time::timeout(T, connect)
        .await
        .expect("a candidate connects within the deadline")
        .expect("connect");
    let dir = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.mkdir(election, &dir).await.expect("mkdir");
    let node = format!("{election}/u__lock__");
    let mode = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    client
        .create(&node, id.as_bytes(), &mode)
        .await
        .expect("create");
    client
}

/// ZooKeeper frozen until the watch says it down (well within the candidate's session,
/// which lives on): the same, read from ZooKeeper's record beside the audit log.
#[test]
fn a_zookeeper_outage_an_earlier_watch_saw_is_in_a_later_history() {
    let zk = ZkServer::start();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let ep = zk.endpoint();
    let _held = rt.block_on(join(&ep, "/m/jobs", "node-a"));
    let home = common::scratch::tempdir();
    let source = ["--zk", ep.as_str(), "--prefix", "/m"];
    let mut watch = Watch::start(home.path(), &source);
    watch.wait_synced(1);
    let (frozen, resumed) = outage_watched(watch, || zk.freeze(true), || zk.freeze(false));
    // Its last answer: a read or ping within the session's timeout before the freeze.
    common::outage::in_a_later_history(
        home.path(),
        &source,
        (frozen, Duration::from_secs(5)),
        (resumed, Duration::from_secs(5)),
    );
}
