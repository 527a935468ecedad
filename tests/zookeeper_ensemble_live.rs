//! electop against a real three-member ZooKeeper ensemble with Curator `LeaderLatch` and
//! kazoo `Election` campaigners: each member's health from `srvr`, a member killed while a
//! failover happens (the source stays live, nothing is lost), electop's own session expired
//! while it was frozen (the re-read reports what changed), and the member electop reads
//! through frozen (stale at once). One ensemble serves the phases, in order.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use common::T;
use common::electop::{command, election, spawn_lines, status_json};
use common::zk_campaigners::{ZkClient, ZkParticipant};
use common::zookeeper_ensemble::ZkEnsemble;
use serde_json::Value;

/// The campaigners' sessions: short, so a killed leader's node goes soon.
const SESSION_MS: u32 = 2000;
/// electop's own session (follow.rs asks for 10 s; the test servers allow it).
const ELECTOP_SESSION: Duration = Duration::from_secs(10);

/// `electop watch --json` whose process the test can freeze.
struct Watch {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<Value>,
}

impl Watch {
    fn start(home: &std::path::Path, args: &[&str]) -> Watch {
        let (child, lines) = spawn_lines(command(home).args(args).args(["watch", "--json"]));
        Watch {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The first line from now on (or already seen, unless `fresh`) matching `pred`.
    fn wait(&mut self, what: &str, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(v) = self.seen.iter().find(|v| pred(v)) {
            return v.clone();
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    let v: Value = serde_json::from_str(&l).expect("watch prints JSON");
                    self.seen.push(v.clone());
                    if pred(&v) {
                        return v;
                    }
                }
                Err(_) => panic!(
                    "watch: no {what} within {timeout:?}; saw:\n{:#?}",
                    self.seen
                ),
            }
        }
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} electop");
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.signal("-CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn leads(p: &mut ZkParticipant, belief: &str) {
    if !p.wait_belief(belief, T) {
        let (name, id, stderr) = (p.client.name(), p.id.clone(), p.stderr());
        panic!("{name} {id} is not {belief}: {:?}\n{stderr}", p.beliefs());
    }
}

fn members(s: &Value) -> Vec<Value> {
    s["sources"][0]["members"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no members in {s:#}"))
}

fn is_change(v: &Value, election: &str, from: &str, to: &str) -> bool {
    v["kind"] == "leader_changed" && v["election"] == election && v["from"] == from && v["to"] == to
}

#[test]
fn members_health_a_member_down_an_expired_session_and_a_frozen_server() {
    let mut zk = ZkEnsemble::start(3);
    let connect = zk.connect_string();
    let start = |c, path, id| ZkParticipant::start(c, &connect, path, id, SESSION_MS);
    let mut ka = start(ZkClient::Kazoo, "/election/kazoo", "k-a");
    leads(&mut ka, "leader");
    let mut kb = start(ZkClient::Kazoo, "/election/kazoo", "k-b");
    leads(&mut kb, "follower");
    let mut ca = start(ZkClient::CuratorLatch, "/election/latch", "c-a");
    leads(&mut ca, "leader");
    let mut cb = start(ZkClient::CuratorLatch, "/election/latch", "c-b");
    leads(&mut cb, "follower");

    let home = common::scratch::tempdir();
    let args = ["--zk", connect.as_str(), "--prefix", "/election"];

    // Health: every member up, in its own mode, one leader; electop's session and since
    // when history is known.
    let s = status_json(home.path(), &args);
    let ms = members(&s);
    assert_eq!(ms.len(), 3, "{s:#}");
    for m in &ms {
        assert_eq!(m["up"], true, "{m:#}");
        assert!(
            matches!(m["mode"].as_str(), Some("leader" | "follower")),
            "{m:#}"
        );
        assert!(
            m["revision"].as_i64().is_some_and(|z| z > 0),
            "a zxid: {m:#}"
        );
        assert!(
            m["latency"].as_str().is_some_and(|l| l.ends_with(" ms")),
            "{m:#}"
        );
    }
    assert_eq!(ms.iter().filter(|m| m["mode"] == "leader").count(), 1);
    let src = &s["sources"][0];
    assert!(
        src["session"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("0x")),
        "{src:#}"
    );
    assert_eq!(src["session"]["timeout_ms"], 10_000, "{src:#}");
    assert!(src["history_since"].is_string(), "{src:#}");
    assert_eq!(election(&s, "kazoo")["leader"]["id"], "k-a");
    assert_eq!(election(&s, "latch")["leader"]["id"], "c-a");
    let holder = &election(&s, "kazoo")["leader"];
    assert!(
        holder["key"]
            .as_str()
            .is_some_and(|k| k.contains("__lock__")),
        "{holder:#}"
    );

    // The table, as a person reads it.
    let out = command(home.path())
        .args(args)
        .arg("status")
        .output()
        .expect("run electop status");
    let table = String::from_utf8_lossy(&out.stdout);
    eprintln!("{table}");
    // The ensemble's health beside the table, on stderr: stdout is the table alone.
    let notes = String::from_utf8_lossy(&out.stderr);
    assert!(notes.contains("3/3 members up"), "{notes}");
    assert!(notes.contains(" leader zxid 0x"), "{notes}");
    assert!(notes.contains("history since"), "{notes}");
    assert!(!table.contains("members up"), "{table}");
    let row = table
        .lines()
        .find(|l| l.contains("kazoo"))
        .unwrap_or_default();
    // A node holds for its session: no time to live, as the dashboard's column says (the
    // session is in the JSON and the detail pane).
    assert!(
        row.contains("k-a") && row.contains(" — ") && !row.contains("0x"),
        "no TTL: {table}"
    );

    // One member killed: it shows down with its error; the source carries on, and a
    // failover meanwhile is seen.
    let mut w = Watch::start(home.path(), &args);
    w.wait("synced", T, |v| v["kind"] == "synced");
    let killed = zk.endpoints()[0].clone();
    zk.kill(0);
    let down = w.wait("member down", T, |v| v["kind"] == "member_down");
    let detail = down["detail"].as_str().unwrap_or_default();
    assert!(
        detail.starts_with(&killed) && detail.contains("not reachable"),
        "{down:#}"
    );
    zk.wait_quorum(&[1, 2], T * 2);
    ka.kill();
    let changed = w.wait("the kazoo failover", T, |v| {
        is_change(v, "kazoo", "k-a", "k-b")
    });
    // Its session ended (killed) and held nothing else: gone, cause untold; or, when
    // electop read through the killed member and the change came in its re-read after
    // moving, unknown (the gap was not seen).
    let moved = w.seen.iter().any(|v| v["kind"] == "disconnected");
    let cause = changed["cause"].as_str().unwrap_or_default();
    assert!(
        cause == "node_gone" || (moved && cause == "unknown"),
        "{changed:#} (electop moved: {moved})"
    );
    w.wait("k-a left the line", T, |v| {
        v["kind"] == "candidate_left" && v["election"] == "kazoo" && v["from"] == "k-a"
    });
    leads(&mut kb, "leader");
    let s = common::wait_for("the source live, the member down", T, || {
        let s = status_json(home.path(), &args);
        let src = &s["sources"][0];
        let m = &members(&s)[0];
        let ok = src["connected"] == true && src["stale"] == false && m["up"] == false;
        if ok { Ok(s) } else { Err(format!("{s:#}")) }
    });
    assert!(members(&s)[0]["error"].is_string(), "{s:#}");
    assert_eq!(election(&s, "kazoo")["leader"]["id"], "k-b");
    zk.restart(0);
    w.wait("member up", T * 2, |v| {
        v["kind"] == "member_up" && v["detail"].as_str() == Some(killed.as_str())
    });
    zk.wait_quorum(&[0, 1, 2], T * 2);
    // Nothing lost, nothing invented: one leader change in kazoo, none in latch.
    let changes = |e: &str| {
        w.seen
            .iter()
            .filter(|v| {
                v["election"] == e && v["kind"].as_str().is_some_and(|k| k.starts_with("leader_"))
            })
            .count()
    };
    assert_eq!(
        (changes("kazoo"), changes("latch")),
        (1, 0),
        "{:#?}",
        w.seen
    );

    // electop frozen beyond its session: the ensemble expires it; meanwhile the latch
    // leader goes. Thawed, electop re-reads and reports the change it missed.
    w.signal("-STOP");
    ca.kill();
    leads(&mut cb, "leader");
    std::thread::sleep(ELECTOP_SESSION + Duration::from_secs(2));
    w.signal("-CONT");
    let missed = w.wait("the change made while away", T * 2, |v| {
        is_change(v, "latch", "c-a", "c-b")
    });
    // Told by the deletion's own event, when the server sent it before it expired electop's
    // session (it waits in the socket, read once thawed); else seen only through the
    // re-read, where what happened in between is not known.
    let cause = missed["cause"].as_str().unwrap_or_default();
    assert!(cause == "node_gone" || cause == "unknown", "{missed:#}");
    // The expiry is said, after the change when its event waited in the socket.
    w.wait("the expiry said", T, |v| {
        v["kind"] == "disconnected"
            && v["detail"].as_str().is_some_and(|d| {
                // Thawed, the client may first find the socket the server closed.
                d.contains("session expired")
                    || d.contains("no answer")
                    || d.contains("connection to ZooKeeper lost")
            })
    });
    drop(w);

    // The one member electop reads through, frozen: stale at once (within the contact
    // interval and its margin), and fresh again once thawed.
    let one = zk.endpoints()[2].clone();
    let single = ["--zk", one.as_str(), "--prefix", "/election"];
    let mut w = Watch::start(home.path(), &single);
    w.wait("synced", T, |v| v["kind"] == "synced");
    zk.freeze(2, true);
    let frozen = Instant::now();
    w.wait("stale", T, |v| v["kind"] == "stale");
    let took = frozen.elapsed();
    zk.freeze(2, false);
    assert!(took < Duration::from_secs(5), "stale after {took:?}");
    w.wait("fresh again", T * 2, |v| {
        v["kind"] == "fresh" || v["kind"] == "connected"
    });
    drop((ka, kb, ca, cb));
}

/// A standalone ZooKeeper whose whitelist allows only `ruok`: `srvr`, which ZooKeeper
/// always allows, still tells its health; a refused word (`mntr`, `cons`) is a typed error
/// that names the setting to change.
#[test]
fn a_restrictive_whitelist_still_gives_health_and_a_refusal_names_the_setting() {
    use common::zookeeper::{JVM_FLAGS, SERVER_CLASSPATH, four_letter};
    use electop::backend::zookeeper::members::{self, WordError};
    let dir = common::scratch::tempdir();
    let port = common::free_port();
    let cfg = dir.path().join("zoo.cfg");
    std::fs::write(
        &cfg,
        format!(
            "tickTime=200\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=ruok\n",
            dir.path().join("data").display()
        ),
    )
    .expect("write zoo.cfg");
    let mut child = Command::new("java")
        .args(JVM_FLAGS)
        .args(["-cp", SERVER_CLASSPATH])
        .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
        .arg(&cfg)
        .env_remove("CLASSPATH")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn java (is zookeeper installed?)");
    // `ruok` answers before the server serves; `srvr` says its mode only once it does.
    common::wait_until("zookeeper serves", Duration::from_secs(30), || {
        four_letter(port, "ruok").as_deref() == Some("imok")
            && common::zookeeper::mode(port).is_some()
    });
    let ep = format!("127.0.0.1:{port}");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for word in ["mntr", "cons"] {
        let got = rt.block_on(members::four_letter(&ep, word, members::PROBE_LIMIT));
        assert_eq!(got, Err(WordError::NotAllowed(word.into())));
        let said = got.unwrap_err().to_string();
        assert!(said.contains("4lw.commands.whitelist"), "{said}");
    }
    let home = common::scratch::tempdir();
    let s = status_json(home.path(), &["--zk", ep.as_str()]);
    let m = &members(&s)[0];
    assert_eq!(
        (&m["up"], &m["mode"]),
        (&Value::from(true), &Value::from("standalone")),
        "{m:#}"
    );
    assert!(m["note"].is_null(), "{m:#}");
    let _ = child.kill();
    let _ = child.wait();
}
