//! Proves the shared harness in tests/common works against a real etcd.

mod common;

use std::time::{Duration, Instant};

use common::{Campaigner, EtcdServer, T, wait_until, wait_until_async};

#[tokio::test]
async fn start_put_get_with_etcdctl_and_client() {
    let started = Instant::now();
    let etcd = EtcdServer::start();
    eprintln!(
        "etcd ready in {:?} at {}",
        started.elapsed(),
        etcd.endpoint()
    );

    etcd.etcdctl(&["put", "/harness/a", "from-etcdctl"]);
    assert_eq!(
        etcd.etcdctl_stdout(&["get", "--print-value-only", "/harness/a"]),
        "from-etcdctl\n"
    );

    let mut client = etcd.client().await;
    let resp = client.get("/harness/a", None).await.expect("client get");
    assert_eq!(
        resp.kvs()[0].value_str().expect("utf-8 value"),
        "from-etcdctl"
    );

    client
        .put("/harness/b", "from-client", None)
        .await
        .expect("client put");
    assert_eq!(
        etcd.get_prefix("/harness/"),
        vec![
            ("/harness/a".to_string(), "from-etcdctl".to_string()),
            ("/harness/b".to_string(), "from-client".to_string()),
        ]
    );

    // A failing etcdctl call is reported, not swallowed.
    assert!(
        !etcd
            .try_etcdctl(&["lease", "revoke", "1234"])
            .status
            .success()
    );

    let mut seen = 0;
    wait_until_async(
        "the async poller runs until true",
        Duration::from_secs(2),
        || {
            seen += 1;
            let done = seen >= 3;
            async move { done }
        },
    )
    .await;
}

#[test]
fn restart_keeps_data_and_ports() {
    let mut etcd = EtcdServer::start();
    let endpoint = etcd.endpoint();
    etcd.etcdctl(&["put", "/harness/persist", "still-here"]);

    etcd.stop();
    assert!(!etcd.is_running());
    assert!(
        !etcd
            .try_etcdctl(&["--command-timeout=300ms", "get", "/harness/persist"])
            .status
            .success()
    );

    let started = Instant::now();
    etcd.restart();
    eprintln!("etcd restarted in {:?}", started.elapsed());
    assert_eq!(etcd.endpoint(), endpoint);
    assert_eq!(
        etcd.etcdctl_stdout(&["get", "--print-value-only", "/harness/persist"]),
        "still-here\n"
    );
    assert!(
        etcd.log_path().exists(),
        "etcd log kept at {}",
        etcd.log_path().display()
    );
}

#[test]
fn campaigners_take_turns() {
    let etcd = EtcdServer::start();
    let election = "/harness/election/scheduler";

    let mut a = Campaigner::start(&etcd, election, "node-a");
    assert!(a.wait_elected(T), "node-a elected: {}", a.stderr());
    let key = a.key().expect("leader key").to_string();
    assert!(key.starts_with(&format!("{election}/")), "leader key {key}");

    let mut b = Campaigner::start(&etcd, election, "node-b");
    wait_until("node-b is queued behind node-a", T, || {
        etcd.candidates(election) == ["node-a", "node-b"]
    });
    assert!(
        !b.wait_elected(Duration::from_millis(300)),
        "node-b must wait"
    );

    // The raw view operators see: key line, value line, per candidate.
    let raw = etcd.etcdctl_stdout(&["get", "--prefix", election]);
    assert!(raw.starts_with(&format!("{key}\nnode-a\n")), "{raw}");

    let status = a.resign();
    assert!(status.success(), "leader resigns cleanly: {status}");
    assert!(b.wait_elected(T), "node-b elected: {}", b.stderr());
    assert_eq!(etcd.candidates(election), ["node-b"]);

    // A candidate still waiting in line exits 1 on SIGINT, and its key goes too. etcdctl
    // deletes its key on SIGINT only once it knows it wrote it: it is watching the key ahead
    // of it by then. Interrupted while the write's answer is still on its way, it exits with
    // the key left to its lease (60 s). So the signal waits for that watch (node-b's own
    // wait in line watched too, and its watch goes some time after it leads).
    wait_until("node-b's watch is gone", T, || etcd.watchers() == 0);
    let mut c = Campaigner::start(&etcd, election, "node-c");
    wait_until("node-c is queued", T, || {
        etcd.candidates(election).len() == 2
    });
    wait_until("node-c watches the key ahead of it", T, || {
        etcd.watchers() == 1
    });
    assert_eq!(c.resign().code(), Some(1));
    // Its stderr is read on a thread of its own: waited for, not looked at once.
    wait_until("etcdctl's error reaches the test", T, || {
        c.stderr().contains("context canceled")
    });
    assert_eq!(etcd.candidates(election), ["node-b"]);

    // SIGKILL does not resign: the key outlives the process (lease TTL 60 s).
    b.kill();
    assert!(!b.is_running());
    assert_eq!(etcd.candidates(election), ["node-b"]);
}
