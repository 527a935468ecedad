//! electop against one real ZooKeeper for its presets, credentials and bad input: Kafka's
//! controller and Hadoop's active NameNode written with the bytes those projects write
//! (ephemeral nodes of a test session, then the session closed), digest ACLs with
//! `--zk-auth`, a missing prefix, a chroot typo, odd node values, a server that is not
//! ZooKeeper, and presets given to the wrong kind of source.

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::T;
use common::electop::{Watch, command, election, status_json};
use common::zookeeper::ZkServer;
use serde_json::Value;
use tokio::runtime::Runtime;
use zookeeper_client::{Acls, Client, CreateMode};

/// What Kafka 3.x's `ControllerZNode.encode(brokerId, timestamp)` writes.
fn controller_json(broker: i32) -> Vec<u8> {
    format!(
        r#"{{"version":2,"brokerid":{broker},"timestamp":"1700000000000","kraftControllerEpoch":-1}}"#
    )
    .into_bytes()
}

/// Hadoop's `ActiveNodeInfo` for nn1 of ns1, as protobuf-java serializes it (fields 1-3
/// strings, 4-5 varints: port 8020, zkfcPort 8019).
const NN1: &[u8] = b"\x0a\x03ns1\x12\x03nn1\x1a\x0fnn1.example.com\x20\xd4\x3e\x28\xd3\x3e";

async fn session(ep: &str, auth: Option<&str>) -> Client {
    let mut c = Client::connector().with_session_timeout(Duration::from_secs(10));
    if let Some(a) = auth {
        c = c.with_auth("digest", a.as_bytes());
    }
    tokio::time::timeout(T, c.connect(ep))
        .await
        .expect("a test session connects within the deadline")
        .expect("connect")
}

fn persistent() -> zookeeper_client::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

fn ephemeral() -> zookeeper_client::CreateOptions<'static> {
    CreateMode::Ephemeral.with_acls(Acls::anyone_all())
}

fn run(home: &Path, args: &[&str]) -> Output {
    command(home)
        .args(args)
        .args(["status", "--timeout", "5s"])
        .output()
        .expect("run electop status")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn session_hex(c: &Client) -> String {
    format!("0x{:x}", c.session_id().0)
}

#[test]
fn presets_credentials_and_bad_input_on_one_zookeeper() {
    let zk = ZkServer::start();
    let rt = Runtime::new().expect("runtime");
    let _controller = kafka_controller(&zk, &rt);
    hadoop_active_namenode(&zk, &rt);
    digest_acl(&zk, &rt);
    missing_prefix_is_watched(&zk, &rt);
    chroot_typo_is_named(&zk);
    odd_values_are_escaped_and_cut(&zk, &rt);
}

/// Kafka's controller below a chroot: the broker id, the epoch, the session; gone with
/// the broker's session, and the next broker's election followed.
fn kafka_controller(zk: &ZkServer, rt: &Runtime) -> Client {
    let ep = zk.endpoint();
    let admin = rt.block_on(session(&ep, None));
    rt.block_on(async {
        for p in ["/kafka", "/kafka/brokers", "/kafka/brokers/ids"] {
            admin.create(p, b"", &persistent()).await.expect("create");
        }
        let epoch = CreateMode::Persistent.with_acls(Acls::anyone_all());
        admin
            .create("/kafka/controller_epoch", b"0", &epoch)
            .await
            .expect("controller_epoch");
    });
    // Kafka's registerControllerAndIncrementControllerEpoch: one multi.
    let elect = |broker: i32, epoch: &str, version: i32| {
        let c = rt.block_on(session(&format!("{ep}/kafka"), None));
        rt.block_on(async {
            let mut w = c.new_multi_writer();
            w.add_create("/controller", &controller_json(broker), &ephemeral())
                .expect("add create");
            w.add_set_data("/controller_epoch", epoch.as_bytes(), Some(version))
                .expect("add set");
            w.commit().await.expect("multi");
        });
        c
    };
    let broker1 = elect(1, "1", 0);
    let home = common::scratch::tempdir();
    let zk_kafka = format!("{ep}/kafka");
    let args = ["--zk", zk_kafka.as_str(), "--preset", "kafka-zk"];
    let s = status_json(home.path(), &args);
    let e = election(&s, "controller");
    assert_eq!(e["scheme"], "kafka-zk", "{e:#}");
    assert_eq!(e["leader"]["id"], "1", "{e:#}");
    assert_eq!(e["leader"]["key"], "/controller", "{e:#}");
    assert!(
        e["leader"].to_string().contains(&session_hex(&broker1)),
        "the holder's session {}: {e:#}",
        session_hex(&broker1)
    );
    assert!(
        e["notes"].to_string().contains("controller epoch 1"),
        "{e:#}"
    );

    let out = run(home.path(), &args);
    let table = text(&out);
    let row = table.lines().find(|l| l.contains("controller"));
    assert!(
        row.is_some_and(|r| r.contains(" 1 ") || r.contains(" 1\t") || r.ends_with(" 1")),
        "the controller's broker id in the table:\n{table}"
    );

    let mut w = Watch::start(home.path(), &args);
    w.wait_synced(1);
    // Dropping a test session's last handle closes it, as a broker that stops.
    drop(broker1);
    let lost = w.wait_for("the controller gone with its session", T, |v| {
        v["election"] == "controller" && v["kind"] == "leader_lost"
    });
    assert_eq!(lost["from"], "1", "{lost:#}");
    let s = status_json(home.path(), &args);
    assert!(election(&s, "controller")["leader"].is_null(), "{s:#}");

    let broker2 = elect(2, "2", 1);
    let elected = w.wait_for("broker 2 elected", T, |v| {
        v["election"] == "controller" && v["kind"] == "leader_elected"
    });
    assert_eq!(elected["to"], "2", "{elected:#}");
    let s = status_json(home.path(), &args);
    let notes = election(&s, "controller")["notes"].to_string();
    assert!(notes.contains("controller epoch 2"), "{notes}");
    broker2
}

/// Hadoop's active NameNode: decoded from ActiveNodeInfo; when its ZKFC's session ends the
/// lock goes and the breadcrumb says who was active last.
fn hadoop_active_namenode(zk: &ZkServer, rt: &Runtime) {
    let ep = zk.endpoint();
    let zkfc = rt.block_on(session(&ep, None));
    rt.block_on(async {
        for p in ["/hadoop-ha", "/hadoop-ha/ns1"] {
            zkfc.create(p, b"", &persistent()).await.expect("create");
        }
        zkfc.create("/hadoop-ha/ns1/ActiveStandbyElectorLock", NN1, &ephemeral())
            .await
            .expect("lock");
        zkfc.create("/hadoop-ha/ns1/ActiveBreadCrumb", NN1, &persistent())
            .await
            .expect("breadcrumb");
    });
    let home = common::scratch::tempdir();
    let args = ["--zk", ep.as_str(), "--preset", "hadoop-ha"];
    let s = status_json(home.path(), &args);
    let e = election(&s, "ns1");
    assert_eq!(e["scheme"], "hadoop-ha", "{e:#}");
    assert_eq!(e["leader"]["id"], "nn1 (nn1.example.com:8020)", "{e:#}");
    assert!(
        e["leader"].to_string().contains(&session_hex(&zkfc)),
        "{e:#}"
    );
    assert_eq!(e["candidates"].as_array().map(Vec::len), Some(1), "no line");
    let table = text(&run(home.path(), &args));
    assert!(
        table
            .lines()
            .any(|l| l.contains("ns1") && l.contains("nn1 (nn1.example.com:8020)")),
        "{table}"
    );

    drop(zkfc);
    let mut s = Value::Null;
    common::wait_until("the lock gone with the ZKFC's session", T, || {
        s = status_json(home.path(), &args);
        election(&s, "ns1")["leader"].is_null()
    });
    let e = election(&s, "ns1");
    assert!(
        e["notes"]
            .to_string()
            .contains("nn1 (nn1.example.com:8020) was active last"),
        "{e:#}"
    );
}

/// Nodes only a digest user may read: without credentials the error names the node and
/// `--zk-auth`; with them the election shows; the password is nowhere in what electop
/// printed or logged.
fn digest_acl(zk: &ZkServer, rt: &Runtime) {
    const PASSWORD: &str = "pw-that-must-not-leak-7f3a";
    let creds = format!("electop:{PASSWORD}");
    let ep = zk.endpoint();
    let owner = rt.block_on(session(&ep, Some(&creds)));
    let (_candidate, _path) = rt.block_on(async {
        let mine = CreateMode::Persistent.with_acls(Acls::creator_all());
        owner.create("/secure", b"", &mine).await.expect("create");
        owner
            .create("/secure/jobs", b"", &mine)
            .await
            .expect("create");
        let seq = CreateMode::EphemeralSequential.with_acls(Acls::creator_all());
        let (_, n) = owner
            .create("/secure/jobs/u1__lock__", b"node-a", &seq)
            .await
            .expect("create");
        ((), n)
    });
    let home = common::scratch::tempdir();
    let args = ["--zk", ep.as_str(), "--prefix", "/secure"];
    let denied = command(home.path())
        .args(args)
        .args(["status", "--json", "--timeout", "5s"])
        .output()
        .expect("run electop");
    let said = text(&denied);
    assert!(!denied.status.success(), "{said}");
    assert!(
        said.contains("NoAuth") && said.contains("/secure") && said.contains("--zk-auth"),
        "{said}"
    );

    let file = home.path().join("zk.auth");
    std::fs::write(&file, format!("{creds}\n")).expect("write");
    let by_file = format!("file:{}", file.display());
    let mut outputs = Vec::new();
    for auth in [by_file.as_str(), "env:ELECTOP_TEST_ZK_AUTH"] {
        let with = [&args[..], &["--zk-auth", auth]].concat();
        let out = command(home.path())
            .env("ELECTOP_TEST_ZK_AUTH", &creds)
            .args(&with)
            .args(["status", "--json", "--timeout", "5s"])
            .output()
            .expect("run electop");
        assert!(out.status.success(), "{auth}: {}", text(&out));
        let s: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(election(&s, "jobs")["leader"]["id"], "node-a", "{s:#}");
        outputs.push(text(&out));
    }
    let unset = command(home.path())
        .args(args)
        .args(["--zk-auth", "env:ELECTOP_TEST_SURELY_UNSET", "status"])
        .output()
        .expect("run electop");
    assert!(
        text(&unset).contains("ELECTOP_TEST_SURELY_UNSET"),
        "{}",
        text(&unset)
    );
    // The credentials on the command line are refused without being repeated.
    let inline = command(home.path())
        .args(args)
        .args(["--zk-auth", &creds, "status"])
        .output()
        .expect("run electop");
    assert_eq!(inline.status.code(), Some(2), "{}", text(&inline));
    outputs.extend([said, text(&unset), text(&inline)]);
    for o in &outputs {
        assert!(!o.contains(PASSWORD), "the password was printed:\n{o}");
    }
    let log = home.path().join("data").join("electop").join("electop.log");
    let logged = std::fs::read_to_string(&log).expect("electop's log");
    assert!(!logged.is_empty());
    assert!(!logged.contains(PASSWORD), "the password was logged");
    drop(owner);
}

/// A prefix that does not exist is said, not shown as an empty store, and what is created
/// there later is followed.
fn missing_prefix_is_watched(zk: &ZkServer, rt: &Runtime) {
    let ep = zk.endpoint();
    let home = common::scratch::tempdir();
    let args = ["--zk", ep.as_str(), "--prefix", "/not/yet"];
    let s = status_json(home.path(), &args);
    let notice = s["sources"][0]["notice"].as_str().unwrap_or_default();
    assert!(
        notice.contains("prefix /not/yet does not exist") && notice.contains("watching"),
        "{s:#}"
    );
    let mut w = Watch::start(home.path(), &args);
    w.wait_synced(1);
    let c = rt.block_on(session(&ep, None));
    rt.block_on(async {
        for p in ["/not", "/not/yet", "/not/yet/jobs"] {
            c.create(p, b"", &persistent()).await.expect("create");
        }
        let seq = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        c.create("/not/yet/jobs/u__lock__", b"late", &seq)
            .await
            .expect("create");
    });
    let got = w.wait_for("the election created under the new prefix", T, |v| {
        v["election"] == "jobs" && v["kind"] == "leader_elected"
    });
    assert_eq!(got["to"], "late", "{got:#}");
    let s = status_json(home.path(), &args);
    assert!(s["sources"][0]["notice"].is_null(), "{s:#}");
    drop(c);
}

/// `host:port/chrot`: every path answers NoNode below a chroot that is not there; said as
/// such, and the other source is still read.
fn chroot_typo_is_named(zk: &ZkServer) {
    let typo = format!("{}/chrot", zk.endpoint());
    let good = format!("{}/kafka", zk.endpoint());
    let home = common::scratch::tempdir();
    let out = command(home.path())
        .args(["--zk", &typo, "--zk", &good, "--preset", "kafka-zk"])
        .args(["status", "--json", "--timeout", "5s"])
        .output()
        .expect("run electop");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "one source read: {said}");
    assert!(said.contains("chroot /chrot does not exist"), "{said}");
    let s: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(election(&s, "controller")["leader"]["id"], "2", "{s:#}");
}

/// A value that is not UTF-8 is shown escaped; one of 900 kB is cut, with its length said.
fn odd_values_are_escaped_and_cut(zk: &ZkServer, rt: &Runtime) {
    let ep = zk.endpoint();
    let c = rt.block_on(session(&ep, None));
    let huge = vec![b'h'; 900_000];
    rt.block_on(async {
        for p in ["/odd", "/odd/bytes", "/odd/huge"] {
            c.create(p, b"", &persistent()).await.expect("create");
        }
        let seq = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        c.create("/odd/bytes/u__lock__", b"\xff\xfe\x1b[2Jx", &seq)
            .await
            .expect("create");
        c.create("/odd/huge/u__lock__", &huge, &seq)
            .await
            .expect("create");
    });
    let home = common::scratch::tempdir();
    let args = ["--zk", ep.as_str(), "--prefix", "/odd"];
    let s = status_json(home.path(), &args);
    assert_eq!(
        election(&s, "bytes")["leader"]["id"],
        "\\xff\\xfe\\u{1b}[2Jx",
        "{s:#}"
    );
    let id = election(&s, "huge")["leader"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(id.chars().count() <= 256, "{} chars", id.len());
    assert!(id.ends_with("(900000 chars)"), "{id}");
    let table = text(&run(home.path(), &args));
    // `status` never cuts a cell when piped; the value itself is cut to 256 characters.
    assert!(table.lines().all(|l| l.chars().count() < 600), "{table}");
    assert!(
        !table.contains('\u{1b}'),
        "no escape sequence reaches the terminal"
    );
    drop(c);
}

/// etcd's client port takes the handshake and says nothing: electop asks it the HTTP way
/// and names it; the etcd source beside it is still read. A refused port is said too.
#[test]
fn a_server_that_is_not_zookeeper_is_named() {
    let etcd = common::EtcdServer::start();
    let ep = etcd.endpoint();
    let hostport = ep.trim_start_matches("http://").to_string();
    let home = common::scratch::tempdir();
    let out = command(home.path())
        .args(["--zk", &hostport, "--etcd", &ep])
        .args(["status", "--json", "--timeout", "5s"])
        .output()
        .expect("run electop");
    let said = text(&out);
    assert_eq!(
        out.status.code(),
        Some(3),
        "the etcd source is read: {said}"
    );
    assert!(
        said.contains(&format!("not a ZooKeeper server at {hostport}"))
            && said.contains("answers HTTP"),
        "{said}"
    );
    let refused = format!("127.0.0.1:{}", common::free_port());
    let out = command(home.path())
        .args(["--zk", &refused, "status", "--timeout", "5s"])
        .output()
        .expect("run electop");
    assert!(
        text(&out).contains(&format!("nothing listens at {refused}")),
        "{}",
        text(&out)
    );
}

/// A ZooKeeper preset on another kind of source, and another kind's preset on --zk: usage
/// errors that name the kind each needs.
#[test]
fn presets_on_the_wrong_kind_of_source_are_refused() {
    let home = common::scratch::tempdir();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--etcd", "127.0.0.1:1", "--preset", "kafka-zk"],
            "--preset kafka-zk needs --zk",
        ),
        (
            &["--zk", "127.0.0.1:1", "--preset", "patroni"],
            "--preset patroni is not a ZooKeeper layout",
        ),
        (
            &["--sql", "sqlite:///tmp/x.db", "--preset", "hadoop-ha"],
            "preset hadoop-ha is not a SQL table: it reads ZooKeeper znodes",
        ),
        (
            &["--zk", "127.0.0.1:1", "--preset", "shedlock"],
            "--preset shedlock is a SQL table",
        ),
    ];
    for (args, want) in cases {
        let out = command(home.path())
            .args(args)
            .arg("status")
            .output()
            .expect("run electop");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(want), "{args:?}: {}", text(&out));
    }
    let cfg = home.path().join("c.toml");
    std::fs::write(
        &cfg,
        "[[source]]\nkind = \"etcd\"\nendpoints = [\"127.0.0.1:1\"]\npreset = \"kafka-zk\"\n",
    )
    .expect("write");
    let out = command(home.path())
        .args(["--config", cfg.to_str().unwrap_or_default(), "status"])
        .output()
        .expect("run electop");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("preset kafka-zk is not etcd keys: it reads ZooKeeper znodes"),
        "{}",
        text(&out)
    );
}
