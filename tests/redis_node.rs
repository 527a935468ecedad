//! `electop node` on a real Redis (one redis-server, keyspace events on, for the binary's
//! scenarios, each on its own lock key): three nodes elect one leader the others follow and
//! `status` agrees; a SIGKILLed leader is replaced once its key's TTL runs out; SIGTERM
//! releases the key at once; an operator's `reelect` deposes the leader at its next renewal
//! while another leads, and `watch`/`status` agree with the nodes; a SIGSTOPped leader whose
//! key expired says so when it resumes; a redis-py `Lock` holder and electop nodes on one key
//! respect each other. The demo on a redis-server it starts itself is at the end, under tmux.

mod common;

use std::cell::Cell;
use std::time::{Duration, Instant};

use common::T;
use common::electop::{Watch, command, election, status_json};
use common::node::{Node, dump_all};
use common::process::signal;
use common::redis::{Holder, LockClient, RedisServer};
use common::scratch::Scratch;
use common::tmux::Tmux;

const PATTERN: &str = "locks:*";
/// The nodes' lock TTL (`--ttl`); they renew every third of it (the default).
const TTL: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(200);
/// Slack on every timing bound: process start, a busy machine.
const SLACK: Duration = Duration::from_millis(1500);
/// How much longer than a bound we keep waiting, to report how late it was.
const OVERRUN: Duration = Duration::from_secs(5);

struct Redis {
    server: RedisServer,
    home: Scratch,
    started: Cell<usize>,
}

impl Redis {
    fn source(&self) -> Vec<String> {
        ["--redis", &self.server.url(), "--prefix", PATTERN]
            .map(String::from)
            .into()
    }

    /// `electop node --json` on lock key `key` as `id`, with `TTL` and `RETRY`.
    fn start(&self, key: &str, id: &str) -> Node {
        let n = self.started.get();
        self.started.set(n + 1);
        let stderr = self.home.path().join(format!("{id}.{n}.stderr"));
        let mut cmd = command(self.home.path());
        cmd.args(self.source())
            .args(["node", "--election", key, "--id", id, "--json"])
            .args(["--retry", &format!("{}ms", RETRY.as_millis())])
            .args(["--ttl", &format!("{}ms", TTL.as_millis())]);
        Node::spawn(&mut cmd, id, key, stderr)
    }

    /// `electop status --json`'s leader of `key`.
    fn status_leader(&self, key: &str) -> Option<String> {
        let src = self.source();
        let src: Vec<&str> = src.iter().map(String::as_str).collect();
        let s = status_json(self.home.path(), &src);
        election(&s, key)["leader"]["id"].as_str().map(String::from)
    }

    /// `electop <args>` with the source flags; whether it succeeded, and what it printed.
    fn run(&self, args: &[&str]) -> (bool, String) {
        let out = command(self.home.path())
            .args(self.source())
            .args(args)
            .output()
            .expect("run electop");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    }
}

/// Starts `ids` one after the other, each once it said what it believes; the first leads.
fn line_up(r: &Redis, key: &str, ids: &[&str]) -> Vec<Node> {
    let mut nodes: Vec<Node> = Vec::new();
    for id in ids {
        let mut n = r.start(key, id);
        match nodes.first() {
            None => n.wait_belief("leader", Some(id), T),
            Some(first) => n.wait_belief("follower", Some(&first.id), T),
        };
        nodes.push(n);
    }
    nodes
}

fn ever_led(n: &Node) -> bool {
    n.beliefs().any(|v| v["belief"] == "leader")
}

/// The index of the one node that believes it leads now, once exactly one does.
fn one_leader(nodes: &mut [Node], among: &[usize], timeout: Duration) -> usize {
    common::wait_for("exactly one leader", timeout, || {
        for i in among {
            nodes[*i].pump();
        }
        let leading: Vec<usize> = among
            .iter()
            .copied()
            .filter(|i| nodes[*i].believes("leader", None).is_some())
            .collect();
        match leading.as_slice() {
            [one] => Ok(*one),
            _ => Err(dump_all(nodes)),
        }
    })
}

/// Three nodes: one leader, the others follow it, and `status` shows it by its id; SIGKILL
/// of the leader hands over once its key's TTL ran out; SIGTERM releases at once.
fn lifecycle(r: &Redis) {
    let key = "locks:jobs";
    let mut nodes = line_up(r, key, &["node-a", "node-b", "node-c"]);
    // A few renewals later, still the same: nobody else ever led.
    std::thread::sleep(TTL);
    for n in nodes.iter_mut() {
        n.pump();
    }
    assert!(
        nodes[0].believes("leader", Some("node-a")).is_some()
            && !ever_led(&nodes[1])
            && !ever_led(&nodes[2]),
        "only node-a ever led:\n{}",
        dump_all(&nodes)
    );
    assert_eq!(r.status_leader(key).as_deref(), Some("node-a"));
    let token = r.server.cli(&["GET", key]);
    assert!(
        token.starts_with("electop-node:node-a:"),
        "the token carries the id: {token}"
    );

    // SIGKILL: nobody releases; another leads once the key expired, not before.
    let killed = Instant::now();
    nodes[0].sigkill();
    let next = one_leader(&mut nodes, &[1, 2], TTL + SLACK + OVERRUN);
    let took = nodes[next]
        .believes("leader", None)
        .expect("leads")
        .saturating_duration_since(killed);
    println!(
        "failover after SIGKILL: {} ms (TTL {TTL:?})",
        took.as_millis()
    );
    assert!(took <= TTL + SLACK, "failover took {took:?}");
    let last = 3 - next;
    let next_id = nodes[next].id.clone();
    nodes[last].wait_belief("follower", Some(&next_id), T);
    assert_eq!(r.status_leader(key), Some(next_id));

    // SIGTERM: the leader deletes its key (compare-then-DEL), so the last leads at once.
    let sent = Instant::now();
    let (status, _) = nodes[next].sigterm(Duration::from_secs(2));
    assert!(status.success(), "SIGTERM exits 0; {}", nodes[next].dump());
    assert!(
        nodes[next].events().any(|e| e == "resigned"),
        "{}",
        nodes[next].dump()
    );
    assert_eq!(
        nodes[next].current().map(|(_, v)| v["belief"].clone()),
        Some("stopped".into())
    );
    let quick = Duration::from_millis(1000);
    let last_id = nodes[last].id.clone();
    let took = nodes[last]
        .wait_belief_at("leader", Some(&last_id), quick + OVERRUN)
        .saturating_duration_since(sent);
    println!("takeover after SIGTERM: {} ms", took.as_millis());
    assert!(took <= quick, "takeover after a release took {took:?}");
}

/// An operator's `reelect`: the key is deleted (compared on the node's token), the leader
/// says it was deposed at its next renewal, another leads, and `watch` and `status` name the
/// same nodes as the nodes do.
fn operator_reelect(r: &Redis) {
    let key = "locks:reelect";
    let mut nodes = line_up(r, key, &["node-a", "node-b", "node-c"]);
    let src = r.source();
    let src: Vec<&str> = src.iter().map(String::as_str).collect();
    let mut w = Watch::start(r.home.path(), &src);
    w.wait_synced(1);
    let mark = nodes[0].seen.len();
    let (ok, text) = r.run(&["reelect", key, "-y"]);
    assert!(ok, "{text}");
    let deleted = Instant::now();
    // Deposed at its next renewal (every third of the TTL).
    let bound = TTL / 3 + SLACK;
    let deposed = common::wait_for("node-a deposed", bound + OVERRUN, || {
        nodes[0].pump();
        nodes[0].seen[mark..]
            .iter()
            .find(|(_, v)| v["belief"] == "deposed")
            .cloned()
            .ok_or_else(|| nodes[0].dump())
    });
    let took = deposed.0.saturating_duration_since(deleted);
    println!("deposed {} ms after the reelect", took.as_millis());
    assert!(took <= bound, "deposed after {took:?}; {}", nodes[0].dump());
    let reason = deposed.1["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("deleted") && !reason.contains("expired"),
        "the reason says why: {reason}"
    );
    let leader = one_leader(&mut nodes, &[0, 1, 2], T);
    let leader_id = nodes[leader].id.clone();
    for (i, n) in nodes.iter_mut().enumerate() {
        if i != leader {
            n.wait_belief("follower", Some(&leader_id), T);
        }
    }
    // The watch (another electop) sees node-a lose the key. Whether it also attributes it to
    // the reelect depends on reading the audit log before a follower took the key, which on
    // Redis (followers retry every 200 ms) it rarely does: the cause is not asserted.
    let lost = w.wait_for("node-a losing the key", T, |v| {
        v["election"] == key && v["from"] == "node-a"
    });
    println!("the watch saw node-a go: {}", lost["cause"]);
    let elected = w.wait_for("the new leader", T, |v| {
        v["election"] == key && v["to"] == leader_id.as_str()
    });
    assert_eq!(elected["to"], leader_id.as_str());
    assert_eq!(r.status_leader(key), Some(leader_id));
}

/// A leader frozen (SIGSTOP) past its TTL: another leads meanwhile, and once thawed it says
/// it was deposed because its key expired unrenewed, then follows, never leading again.
fn frozen_leader(r: &Redis) {
    let key = "locks:frozen";
    let mut nodes = line_up(r, key, &["node-a", "node-b"]);
    let pid = nodes[0].child.id();
    signal("-STOP", &[pid]);
    nodes[1].wait_belief("leader", Some("node-b"), TTL + SLACK + OVERRUN);
    let mark = nodes[0].seen.len();
    signal("-CONT", &[pid]);
    nodes[0].wait_belief("follower", Some("node-b"), T);
    let after: Vec<&serde_json::Value> = nodes[0].seen[mark..].iter().map(|(_, v)| v).collect();
    let deposed = after
        .iter()
        .find(|v| v["belief"] == "deposed")
        .unwrap_or_else(|| panic!("deposed after resuming; {}", nodes[0].dump()));
    let reason = deposed["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("expired before I renewed it") && reason.contains("node-b holds it"),
        "{reason}"
    );
    assert!(
        !after.iter().any(|v| v["belief"] == "leader"),
        "never leader again after resuming; {}",
        nodes[0].dump()
    );
    assert_eq!(r.status_leader(key).as_deref(), Some("node-b"));
}

/// A redis-py `Lock` holder and electop nodes on one key: whoever holds it, the others
/// wait, and each takes it only when the other let it go.
fn with_redis_py(r: &Redis) {
    let key = "locks:mixed";
    let ttl_ms = TTL.as_millis() as u32;
    let mut py = [Holder::start(
        LockClient::RedisPy,
        r.server.port(),
        None,
        key,
        "py-a",
        ttl_ms,
    )];
    let (_, token) = common::redis::wait_leader(&mut py, T);
    let mut b = r.start(key, "node-b");
    b.wait_belief("follower", Some(&token), T);
    // Over several of its renewals, the node never takes the lock from redis-py.
    std::thread::sleep(TTL * 2);
    b.pump();
    assert!(!ever_led(&b), "{}", b.dump());
    assert_eq!(py[0].leading().as_deref(), Some(token.as_str()));
    assert_eq!(r.status_leader(key), Some(token.clone()));

    // redis-py's holder dies: the node leads once its key expired.
    let killed = Instant::now();
    py[0].kill();
    b.wait_belief("leader", Some("node-b"), TTL + SLACK + OVERRUN);
    println!(
        "node-b leads {} ms after the redis-py holder's SIGKILL",
        killed.elapsed().as_millis()
    );
    // A new redis-py holder waits while the node renews.
    let mut py2 = [Holder::start(
        LockClient::RedisPy,
        r.server.port(),
        None,
        key,
        "py-c",
        ttl_ms,
    )];
    std::thread::sleep(TTL * 2);
    assert_eq!(
        py2[0].leading(),
        None,
        "redis-py waits while node-b holds it"
    );
    b.pump();
    assert!(
        b.believes("leader", Some("node-b")).is_some(),
        "{}",
        b.dump()
    );
    // The node releases on SIGTERM: redis-py takes it at its next try.
    b.sigterm(Duration::from_secs(2));
    let (_, token) = common::redis::wait_leader(&mut py2, T);
    assert_eq!(r.status_leader(key), Some(token));
}

#[test]
fn redis_nodes_elect_fail_over_and_notice_every_deposition() {
    let r = Redis {
        server: RedisServer::start("KEA", None),
        home: common::scratch::tempdir(),
        started: Cell::new(0),
    };
    lifecycle(&r);
    operator_reelect(&r);
    frozen_leader(&r);
    with_redis_py(&r);
}

/// The processes whose command line holds `pattern`.
fn running(pattern: &str) -> usize {
    let out = std::process::Command::new("pgrep")
        .args(["-f", "--", pattern])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// The leader's node name in the demo's panes.
fn pane_leader(s: &str) -> Option<String> {
    s.lines()
        .find(|l| l.trim_end().ends_with(" LEADER") && !l.contains("KILLED"))
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("node-")))
        .map(str::to_string)
}

/// The demo on a redis-server it starts itself, at 80x24: three node panes, one leader the
/// others follow and the dashboard shows; killing it fails over on screen; on quit neither
/// the nodes nor redis-server are left running.
#[test]
fn demo_on_a_spawned_redis_fails_over_and_cleans_up() {
    let home = common::scratch::tempdir();
    let h = home.path().display();
    let shell = format!(
        "env RUST_BACKTRACE=0 XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} \
         demo --store redis --spawn-redis --ttl 2s; echo ELECTOP-EXITED $?; sleep 60",
        bin = common::electop::bin(),
    );
    let tmux = Tmux::start(80, 24, &shell);
    let screen = tmux.wait_screen("a leader and two followers", T, |s| {
        s.contains(" LEADER\n") && s.matches("follower of node-").count() == 2
    });
    assert!(screen.contains("live: keyspace events"), "{screen}");
    let leader = pane_leader(&screen).expect("the leader's pane");
    assert!(
        screen.matches(&format!("follower of {leader}")).count() == 2,
        "both others follow {leader}:\n{screen}"
    );
    // The dashboard's row names the same leader: the key, then the leader column.
    let row = screen
        .lines()
        .find(|l| l.contains("electop-demo:leader") && l.contains("redis "))
        .unwrap_or_else(|| panic!("the election's row:\n{screen}"));
    assert!(row.contains(&format!(" {leader} ")), "{row}\n{screen}");
    let url = screen
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:") && w.ends_with("/0"))
        .map(|a| format!("redis://{a}"))
        .expect("the spawned server's address on screen");
    assert_eq!(running(&format!("--redis {url}")), 3, "three nodes run");
    // redis-server names itself by its address in the process list.
    let server = format!(
        "redis-server {}",
        url.trim_start_matches("redis://").trim_end_matches("/0")
    );
    assert_eq!(running(&server), 1, "the demo's redis-server runs");
    let events = common::redis::cli(
        url.trim_start_matches("redis://127.0.0.1:")
            .trim_end_matches("/0")
            .parse()
            .expect("a port"),
        None,
        &["CONFIG", "GET", "notify-keyspace-events"],
    );
    assert!(events.contains('K') && events.contains('x'), "{events}");

    let digit = leader.trim_start_matches("node-").to_string();
    tmux.send(&[&digit, "x"]);
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
    assert_eq!(running(&format!("--redis {url}")), 0, "no node left");
    assert_eq!(running(&server), 0, "the demo's redis-server is stopped");
}

/// What `electop` printed on stderr for `args`, which must fail.
fn fails(home: &std::path::Path, args: &[&str]) -> String {
    let out = command(home)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run electop");
    assert!(!out.status.success(), "{args:?} must fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Bad input is refused before anything connects, saying what to do.
#[test]
fn bad_redis_node_and_demo_input_says_what_to_do() {
    let home = common::scratch::tempdir();
    let h = home.path();
    let no_url = fails(h, &["demo", "--store", "redis"]);
    assert!(
        no_url.contains("--redis redis://HOST:PORT") && no_url.contains("--spawn-redis"),
        "{no_url}"
    );
    let wrong_store = fails(h, &["demo", "--spawn-redis"]);
    assert!(wrong_store.contains("add --store redis"), "{wrong_store}");
    // Nothing listens there: these must fail before they try.
    let src = ["--redis", "redis://127.0.0.1:9", "--prefix", "locks:*"];
    let outside = fails(
        h,
        &[&src[..], &["node", "--election", "jobs", "--id", "a"]].concat(),
    );
    assert!(
        outside.contains("--election jobs does not match --prefix locks:*"),
        "{outside}"
    );
    let bad_key = fails(
        h,
        &[&src[..], &["node", "--election", "", "--id", "a"]].concat(),
    );
    assert!(
        bad_key.contains("the election is the lock key"),
        "{bad_key}"
    );
}

/// The demo on Redis, offered from Redis's folder, is checked as the demo's own stores are:
/// what it needs, its spawn flag, the flags that are not its own and theirs that are not the
/// others', its address and `--scheme`, each in the order they always were.
#[test]
fn the_demo_on_a_store_s_own_offer_checks_its_flags() {
    let cases: [(&[&str], &str); 8] = [
        (
            &["demo", "--store", "redis"],
            "--store redis needs --redis redis://HOST:PORT, or --spawn-redis to start a local one",
        ),
        (
            &["demo", "--store", "etcd", "--spawn-redis"],
            "--spawn-redis starts a redis-server for --store redis, and the demo runs on \
             --store etcd; add --store redis",
        ),
        (
            &["demo", "--spawn-redis", "--spawn-etcd"],
            "--spawn-etcd starts an etcd for --store etcd",
        ),
        (
            &["demo", "--redis", "redis://h:1", "--sql", "sqlite:///x.db"],
            "--redis does not apply to the demo's --store sqlite",
        ),
        (
            &[
                "demo",
                "--store",
                "redis",
                "--redis",
                "redis://h:1",
                "--zk",
                "h:1",
            ],
            "--zk does not apply to the demo's --store redis",
        ),
        (
            &["demo", "--store", "redis", "--redis", "http://h:1"],
            "`http://` is not a Redis URL",
        ),
        (
            &[
                "demo",
                "--store",
                "redis",
                "--redis",
                "redis://h:1",
                "--scheme",
                "sql-lease",
            ],
            "--scheme sql-lease does not run on the demo's --store redis: leave --scheme out",
        ),
        (
            &[
                "--redis",
                "redis://h:1",
                "node",
                "--store",
                "zookeeper",
                "--election",
                "e",
                "--id",
                "a",
            ],
            "--store zookeeper needs --zk HOST:PORT, and --redis gives redis",
        ),
    ];
    let home = common::scratch::tempdir();
    for (args, wants) in cases {
        let said = fails(home.path(), args);
        assert!(
            said.contains(wants),
            "{args:?}: `{wants}` missing from: {said}"
        );
    }
}
