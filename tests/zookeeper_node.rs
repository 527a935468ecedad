//! `electop node` on a real ZooKeeper (one standalone server for the binary's scenarios,
//! each in its own election): three nodes elect the lowest sequence, the others follow it
//! and `status` agrees; a SIGKILLed leader is replaced once its session times out; SIGTERM
//! resigns at once; an operator's delete of the leader's node deposes it within one watch
//! event while the next leads; a SIGSTOPped leader whose session expired says it was
//! deposed when it resumes; and a Curator `LeaderLatch` in the same line agrees on who
//! leads. The demo on a ZooKeeper it starts itself is at the end, under tmux.

mod common;

use std::cell::Cell;
use std::time::{Duration, Instant};

use common::T;
use common::electop::{command, election, status_json};
use common::node::{Node, dump_all};
use common::process::signal;
use common::scratch::Scratch;
use common::tmux::Tmux;
use common::zk_campaigners::{ZkClient, ZkParticipant};
use common::zookeeper::ZkServer;
use serde_json::Value;

const PREFIX: &str = "/election";
/// The nodes' session timeout (`--ttl`); they confirm it every third (the default renew).
const SESSION: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(300);
/// Slack on every timing bound: process start, a JVM's reads, the server's session ticks.
const SLACK: Duration = Duration::from_millis(1500);
/// How much longer than a bound we keep waiting, to report how late it was.
const OVERRUN: Duration = Duration::from_secs(5);

struct Zk {
    server: ZkServer,
    home: Scratch,
    started: Cell<usize>,
}

impl Zk {
    fn source(&self) -> Vec<String> {
        ["--zk", &self.server.endpoint(), "--prefix", PREFIX]
            .map(String::from)
            .into()
    }

    /// `electop node --json` in `election` as `id`, with `RETRY`, any `extra` node flags,
    /// and a session of `SESSION` unless they give another.
    fn start(&self, election: &str, id: &str, extra: &[&str]) -> Node {
        let n = self.started.get();
        self.started.set(n + 1);
        let stderr = self.home.path().join(format!("{id}.{n}.stderr"));
        let mut cmd = command(self.home.path());
        cmd.args(self.source())
            .args(["node", "--store", "zookeeper"])
            .args(["--election", election, "--id", id, "--json"])
            .args(["--retry", &format!("{}ms", RETRY.as_millis())])
            .args(extra);
        if !extra.contains(&"--ttl") {
            cmd.args(["--ttl", &format!("{}ms", SESSION.as_millis())]);
        }
        Node::spawn(&mut cmd, id, election, stderr)
    }

    /// `electop status --json`'s view of `name`: its leader's id and its line, in order.
    fn status(&self, name: &str) -> (Option<String>, Vec<String>) {
        let src = self.source();
        let src: Vec<&str> = src.iter().map(String::as_str).collect();
        let s = status_json(self.home.path(), &src);
        let e = election(&s, name);
        let line = e["candidates"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["id"].as_str()).map(String::from))
            .into_iter()
            .flatten()
            .collect();
        (e["leader"]["id"].as_str().map(String::from), line)
    }

    /// The znode of `name`'s leader, as `status` shows it.
    fn leader_key(&self, name: &str) -> String {
        let src = self.source();
        let src: Vec<&str> = src.iter().map(String::as_str).collect();
        let s = status_json(self.home.path(), &src);
        election(&s, name)["leader"]["key"]
            .as_str()
            .unwrap_or_else(|| panic!("no leader key for {name} in {s:#}"))
            .to_string()
    }

    /// Deletes `path` as an operator would, with its own session; returns when ZooKeeper
    /// answered.
    fn delete(&self, path: &str) -> Instant {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let client = zookeeper_client::Client::connect(&self.server.endpoint())
                .await
                .expect("connect to ZooKeeper");
            client.delete(path, None).await.expect("delete the node");
        });
        Instant::now()
    }
}

/// Starts `ids` one after the other, each once it has said what it believes, so the line
/// is in that order; the first leads.
fn line_up(zk: &Zk, election: &str, ids: &[&str], extra: &[&str]) -> Vec<Node> {
    let mut nodes = Vec::new();
    for id in ids {
        let mut n = zk.start(election, id, extra);
        match nodes.first() {
            None => n.wait_belief("leader", Some(id), T),
            Some(first) => {
                let first: &Node = first;
                let leader = first.id.clone();
                n.wait_belief("follower", Some(&leader), T)
            }
        };
        nodes.push(n);
    }
    nodes
}

fn ever_led(n: &Node) -> bool {
    n.beliefs().any(|v| v["belief"] == "leader")
}

/// Three nodes: one leader, the others follow it and `status` shows that line; SIGKILL of
/// the leader hands over to the next in line once its session has timed out; SIGTERM of
/// that one resigns, and the last leads at once.
fn lifecycle(zk: &Zk) {
    let name = "jobs";
    let mut nodes = line_up(zk, name, &["node-a", "node-b", "node-c"], &[]);
    for n in nodes.iter_mut() {
        n.pump();
    }
    assert!(
        ever_led(&nodes[0]) && !ever_led(&nodes[1]) && !ever_led(&nodes[2]),
        "only node-a ever led:\n{}",
        dump_all(&nodes)
    );
    let (leader, line) = zk.status(name);
    assert_eq!(
        leader.as_deref(),
        Some("node-a"),
        "status shows the nodes' leader"
    );
    assert_eq!(
        line,
        ["node-a", "node-b", "node-c"],
        "status shows the line"
    );

    // SIGKILL: nobody resigns; the next in line (not any other) leads after the session.
    let killed = Instant::now();
    nodes[0].sigkill();
    let bound = SESSION + SLACK;
    let at = nodes[1].wait_belief_at("leader", Some("node-b"), bound + OVERRUN);
    let took = at.saturating_duration_since(killed);
    println!(
        "failover after SIGKILL: {} ms (session {} ms)",
        took.as_millis(),
        SESSION.as_millis()
    );
    assert!(took <= bound, "failover took {took:?}, more than {bound:?}");
    nodes[2].wait_belief("follower", Some("node-b"), T);
    assert!(!ever_led(&nodes[2]), "{}", nodes[2].dump());
    assert_eq!(zk.status(name).1, ["node-b", "node-c"]);

    // SIGTERM: the leader deletes its node, so the last leads well before a session.
    let sent = Instant::now();
    let (status, _) = nodes[1].sigterm(Duration::from_secs(2));
    assert!(status.success(), "SIGTERM exits 0; {}", nodes[1].dump());
    assert!(
        nodes[1].events().any(|e| e == "resigned"),
        "{}",
        nodes[1].dump()
    );
    assert_eq!(
        nodes[1].current().map(|(_, v)| v["belief"].clone()),
        Some("stopped".into())
    );
    let quick = Duration::from_millis(1000);
    let took = nodes[2]
        .wait_belief_at("leader", Some("node-c"), quick + OVERRUN)
        .saturating_duration_since(sent);
    println!("takeover after SIGTERM: {} ms", took.as_millis());
    assert!(took <= quick, "takeover after a resign took {took:?}");
}

/// An operator deletes the leader's node (its session lives on): the leader says it was
/// deposed within a watch event, not at its next renewal, and joins the line at its end;
/// the next in line leads as quickly; status shows the same.
fn operator_delete(zk: &Zk) {
    let name = "deleted";
    // A renewal far off, so only the watch can tell the leader in time.
    let slow = ["--ttl", "9s", "--renew", "8s"];
    let mut nodes = line_up(zk, name, &["node-a", "node-b", "node-c"], &slow);
    let key = zk.leader_key(name);
    let mark = nodes[0].seen.len();
    let deleted = zk.delete(&key);
    let quick = Duration::from_millis(500);
    let at = nodes[0].wait_belief_at("follower", Some("node-b"), quick + OVERRUN);
    let deposed = nodes[0].seen[mark..]
        .iter()
        .find(|(_, v)| v["belief"] == "deposed")
        .unwrap_or_else(|| panic!("the leader says it was deposed; {}", nodes[0].dump()));
    let took = deposed.0.saturating_duration_since(deleted);
    println!("deposed {} ms after the delete", took.as_millis());
    assert!(took <= quick, "deposed after {took:?}; {}", nodes[0].dump());
    let reason = deposed.1["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("deleted"), "the reason says why: {reason}");
    assert!(at.saturating_duration_since(deleted) <= quick);
    let next = nodes[1]
        .wait_belief_at("leader", Some("node-b"), quick + OVERRUN)
        .saturating_duration_since(deleted);
    assert!(next <= quick, "node-b led {next:?} after the delete");
    nodes[2].wait_belief("follower", Some("node-b"), quick + OVERRUN);
    // Back in line, at its end.
    assert_eq!(
        zk.status(name),
        (
            Some("node-b".into()),
            vec!["node-b".into(), "node-c".into(), "node-a".into()]
        )
    );
}

/// A leader frozen (SIGSTOP) past its session: another leads meanwhile, and once thawed it
/// says it was deposed (its session expired), then follows.
fn frozen_leader(zk: &Zk) {
    let name = "frozen";
    let mut nodes = line_up(zk, name, &["node-a", "node-b"], &[]);
    let pid = nodes[0].child.id();
    signal("-STOP", &[pid]);
    nodes[1].wait_belief("leader", Some("node-b"), SESSION + SLACK + OVERRUN);
    // Past the session for sure, as the server counts it.
    std::thread::sleep(SESSION);
    let mark = nodes[0].seen.len();
    signal("-CONT", &[pid]);
    nodes[0].wait_belief("follower", Some("node-b"), T);
    let after: Vec<&Value> = nodes[0].seen[mark..].iter().map(|(_, v)| v).collect();
    let deposed = after
        .iter()
        .position(|v| v["belief"] == "deposed")
        .unwrap_or_else(|| panic!("deposed after resuming; {}", nodes[0].dump()));
    let reason = after[deposed]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("session expired"), "{reason}");
    assert!(
        !after.iter().any(|v| v["belief"] == "leader"),
        "never leader again after resuming; {}",
        nodes[0].dump()
    );
    assert_eq!(zk.status(name).0.as_deref(), Some("node-b"));
}

/// A Curator `LeaderLatch` between two electop nodes: one line, and each agrees on who
/// leads as the leader changes.
fn with_curator(zk: &Zk) {
    let name = "mixed";
    let mut a = zk.start(name, "node-a", &[]);
    a.wait_belief("leader", Some("node-a"), T);
    let path = format!("{PREFIX}/{name}");
    let session_ms = SESSION.as_millis() as u32;
    let mut curator = ZkParticipant::start(
        ZkClient::CuratorLatch,
        &zk.server.endpoint(),
        &path,
        "curator-b",
        session_ms,
    );
    // It says "follower" as it starts: its node in the line is what counts.
    common::wait_for("Curator's latch joins the line", T, || {
        match zk.status(name) {
            (_, line) if line == ["node-a", "curator-b"] => Ok(()),
            other => Err(format!("{other:?}; Curator: {}", curator.stderr())),
        }
    });
    assert_eq!(curator.belief().as_deref(), Some("follower"));
    let mut c = zk.start(name, "node-c", &[]);
    c.wait_belief("follower", Some("node-a"), T);
    assert_eq!(
        zk.status(name),
        (
            Some("node-a".into()),
            vec!["node-a".into(), "curator-b".into(), "node-c".into()]
        )
    );
    // node-a goes: Curator's latch, next in line, leads; node-c follows it.
    let killed = Instant::now();
    a.sigkill();
    assert!(
        curator.wait_belief("leader", SESSION + SLACK + OVERRUN),
        "Curator leads after node-a's session: {:?}",
        curator.beliefs()
    );
    println!(
        "Curator leads {} ms after node-a's SIGKILL",
        killed.elapsed().as_millis()
    );
    c.wait_belief("follower", Some("curator-b"), T);
    assert!(!ever_led(&c), "{}", c.dump());
    // Curator goes: node-c leads.
    curator.kill();
    c.wait_belief("leader", Some("node-c"), SESSION + SLACK + OVERRUN);
}

/// The server frozen past the session: the leader stops believing it leads by the end of
/// its session (lost contact), and once the server is back one node leads, the other
/// follows it, and status agrees; neither is left following a node of its own old session.
fn frozen_server(zk: &Zk) {
    let name = "outage";
    let mut nodes = line_up(zk, name, &["node-a", "node-b"], &[]);
    let mark = nodes[0].seen.len();
    zk.server.freeze(true);
    let frozen = Instant::now();
    let bound = SESSION + SLACK;
    let at = nodes[0].wait_belief_at("no-contact", None, bound + OVERRUN);
    zk.server.freeze(false);
    let took = at.saturating_duration_since(frozen);
    println!(
        "the leader stopped believing {} ms into the outage",
        took.as_millis()
    );
    assert!(took <= bound, "{took:?}; {}", nodes[0].dump());
    assert!(
        !nodes[0].seen[mark..]
            .iter()
            .any(|(_, v)| v["belief"] == "leader"),
        "{}",
        nodes[0].dump()
    );
    let (leader, other) = common::wait_for("one leader after the outage", T, || {
        for n in nodes.iter_mut() {
            n.pump();
        }
        match (0..2).find(|&i| nodes[i].believes("leader", None).is_some()) {
            Some(i) => Ok((i, 1 - i)),
            None => Err(dump_all(&nodes)),
        }
    });
    let leader_id = nodes[leader].id.clone();
    nodes[other].wait_belief("follower", Some(&leader_id), T);
    assert_eq!(zk.status(name).0, Some(leader_id));
}

#[test]
fn zookeeper_nodes_elect_fail_over_and_notice_every_deposition() {
    let zk = Zk {
        server: ZkServer::start(),
        home: common::scratch::tempdir(),
        started: Cell::new(0),
    };
    lifecycle(&zk);
    operator_delete(&zk);
    frozen_leader(&zk);
    with_curator(&zk);
    frozen_server(&zk);
}

/// The processes whose command line holds `pattern`.
fn running(pattern: &str) -> usize {
    let out = std::process::Command::new("pgrep")
        .args(["-f", "--", pattern])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// The demo on a ZooKeeper it starts itself, at 80x24: three node panes, one leader the
/// others follow; killing it fails over on screen; on quit neither the nodes nor ZooKeeper
/// are left running.
#[test]
fn demo_on_a_spawned_zookeeper_fails_over_and_cleans_up() {
    let home = common::scratch::tempdir();
    let h = home.path().display();
    let shell = format!(
        "env RUST_BACKTRACE=0 XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} \
         demo --store zookeeper --spawn-zookeeper --ttl 2s; echo ELECTOP-EXITED $?; sleep 60",
        bin = common::electop::bin(),
    );
    let tmux = Tmux::start(80, 24, &shell);
    let (screen, leader) = common::tmux::demo_elected(&tmux);
    let endpoint = screen
        .split_whitespace()
        .skip_while(|w| *w != "zookeeper")
        .find(|w| w.starts_with("127.0.0.1:"))
        .expect("the spawned ZooKeeper's endpoint on screen")
        .to_string();
    assert!(screen.contains("zookeeper on 127.0.0.1:"), "{screen}");
    assert_eq!(running(&format!("--zk {endpoint}")), 3, "three nodes run");
    // The demo's directory, from a node's log file flag: the server's zoo.cfg is there.
    let out = std::process::Command::new("pgrep")
        .args(["-af", "--", &format!("--zk {endpoint}")])
        .output()
        .expect("pgrep");
    let zoo_cfg = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find_map(|w| w.strip_suffix("/nodes.log"))
        .map(|dir| format!("ZooKeeperServerMain {dir}/zoo.cfg"))
        .expect("the demo's directory in a node's flags");
    assert_eq!(running(&zoo_cfg), 1, "the demo's ZooKeeper runs");

    let digit = leader.trim_start_matches("node-").to_string();
    tmux.send(&[&digit, "x"]);
    // The dashboard sees the old node go; the new leader's pane says so when it knows.
    let pane_leader = |s: &str| -> Option<String> {
        s.lines()
            .find(|l| l.trim_end().ends_with(" LEADER") && !l.contains("KILLED"))
            .and_then(|l| l.split_whitespace().find(|w| w.starts_with("node-")))
            .map(str::to_string)
    };
    let screen = tmux.wait_screen("the failover", T, |s| {
        s.contains("KILLED")
            && s.contains(&format!("failover {leader} →"))
            && pane_leader(s).is_some()
    });
    assert!(screen.contains("split brains: 0"), "{screen}");
    let next = pane_leader(&screen).expect("checked above");
    assert_ne!(next, leader);
    tmux.wait_screen("the last node follows the new leader", T, |s| {
        s.contains(&format!("follower of {next}"))
    });

    tmux.send(&["q"]);
    tmux.wait_screen("the question", T, |s| s.contains("Quit?"));
    tmux.send(&["y"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
    assert_eq!(running(&format!("--zk {endpoint}")), 0, "no node left");
    assert_eq!(running(&zoo_cfg), 0, "the demo's ZooKeeper is stopped");
}

/// What `electop` printed on stderr for `args`, which must fail.
fn fails(home: &std::path::Path, path_env: Option<&str>, args: &[&str]) -> String {
    let mut cmd = command(home);
    if let Some(p) = path_env {
        cmd.env("PATH", p);
    }
    let out = cmd
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run electop");
    assert!(!out.status.success(), "{args:?} must fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Bad input is refused before anything connects, saying what to do.
#[test]
fn bad_zookeeper_node_and_demo_input_says_what_to_do() {
    let home = common::scratch::tempdir();
    let h = home.path();
    let no_java = fails(
        h,
        Some("/nonexistent"),
        &["demo", "--store", "zookeeper", "--spawn-zookeeper"],
    );
    assert!(
        no_java.contains("java is not installed") && no_java.contains("openjdk-17-jdk-headless"),
        "{no_java}"
    );
    let no_zk = fails(h, None, &["demo", "--store", "zookeeper"]);
    assert!(
        no_zk.contains("--zk HOST:PORT") && no_zk.contains("--spawn-zookeeper"),
        "{no_zk}"
    );
    let wrong_store = fails(h, None, &["demo", "--spawn-zookeeper"]);
    assert!(
        wrong_store.contains("add --store zookeeper"),
        "{wrong_store}"
    );
    // Nothing listens there: these must fail before they try.
    let zk = ["--zk", "127.0.0.1:9", "--prefix", "/election"];
    let scheme = fails(
        h,
        None,
        &[
            &zk[..],
            &[
                "--scheme",
                "etcd-election",
                "node",
                "--election",
                "jobs",
                "--id",
                "a",
            ],
        ]
        .concat(),
    );
    assert!(
        scheme.contains("--scheme etcd-election is an etcd scheme")
            && scheme.contains("does not apply to --zk"),
        "{scheme}"
    );
    let path = fails(
        h,
        None,
        &[&zk[..], &["node", "--election", "a//b", "--id", "a"]].concat(),
    );
    assert!(path.contains("znode path below --prefix"), "{path}");
    // `--store`, as the demo names stores, must agree with where the flags point.
    let store = fails(
        h,
        None,
        &[
            "--etcd",
            "127.0.0.1:9",
            "node",
            "--store",
            "zookeeper",
            "--election",
            "jobs",
            "--id",
            "a",
        ],
    );
    assert!(
        store.contains("--store zookeeper needs --zk HOST:PORT")
            && store.contains("--etcd gives etcd"),
        "{store}"
    );
}
