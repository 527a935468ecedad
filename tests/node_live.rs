//! `electop node` against real stores, for every scheme (and every SQL store): three
//! participants elect exactly one leader; SIGKILL of the leader fails over within the
//! scheme's timeout; SIGTERM resigns, so the next one takes over well before it; an
//! operator's force-leader is honoured by the participants; and etcd-election participants
//! ride out an etcd outage (no-contact, then a new leader).
//!
//! Two more pin down what once went wrong: a leader cut off from its store (through a proxy
//! that goes silent) must stop believing it leads by the time its lease or term is over and
//! still exit promptly on SIGTERM; and an etcd TTL that is not whole seconds must not end up
//! shorter than the renew interval.
//!
//! Every way an operator can depose a leader, in every scheme, is in [`deposed`].

mod common;
#[path = "node_live/deposed.rs"]
mod deposed;

use std::cell::Cell;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::POLL_INTERVAL;
use common::electop::{command, election, status_json};
use common::etcd::EtcdServer;
use common::node::{Node, dump_all, is_belief};
use common::proxy::Proxy;
use common::scratch::Scratch;
use common::sqlstore::Store;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Deadline for what has no bound of its own (start-up, reconnecting, followers catching up).
use common::T;
/// Slack on every timing bound: process start, statements, etcd's lease expiry checks.
const SLACK: Duration = Duration::from_millis(1500);
/// How long a SIGTERMed node may take to resign and exit.
const EXIT: Duration = Duration::from_secs(2);
/// How much longer than a bound we keep waiting, to report how late it was.
const OVERRUN: Duration = Duration::from_secs(5);
/// A proxy outlives any test that uses it by little: it stops by itself.
const PROXY_LIFETIME: Duration = Duration::from_secs(120);

#[derive(Clone, Copy, Debug)]
struct Timing {
    /// etcd lease TTL / sql-lease term / sql-heartbeat timeout.
    ttl: Duration,
    renew: Duration,
    retry: Duration,
}

fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

impl Timing {
    fn args(&self) -> [String; 6] {
        [
            "--ttl".into(),
            ms(self.ttl),
            "--renew".into(),
            ms(self.renew),
            "--retry".into(),
            ms(self.retry),
        ]
    }
}

/// One election in one store, and how to run participants, status and admin actions on it.
struct Scenario {
    label: String,
    home: Scratch,
    /// Source flags, `--scheme` included; the same for node, status and force-leader.
    source: Vec<String>,
    election: String,
    timing: Timing,
    /// Extra `node` flags (`--create-table`).
    node_flags: Vec<String>,
    started: Cell<usize>,
}

impl Scenario {
    fn new(
        label: &str,
        source: Vec<String>,
        election: &str,
        timing: Timing,
        node_flags: &[&str],
    ) -> Scenario {
        Scenario {
            label: label.to_string(),
            home: common::scratch::tempdir(),
            source,
            election: election.to_string(),
            timing,
            node_flags: node_flags.iter().map(|s| s.to_string()).collect(),
            started: Cell::new(0),
        }
    }

    fn etcd(etcd: &EtcdServer, scheme: &str) -> Scenario {
        let mut source: Vec<String> = ["--etcd", &etcd.endpoint(), "--scheme", scheme]
            .map(String::from)
            .into();
        if scheme == "etcd-lease-key" {
            // A registry, so a follower has a lease force-leader can attach the key to.
            source.extend(["--prefix", "/lead/", "--registry", "/reg/"].map(String::from));
        } else {
            source.extend(["--prefix", "/elect/"].map(String::from));
        }
        let timing = Timing {
            ttl: Duration::from_secs(2),
            renew: Duration::from_millis(500),
            retry: Duration::from_millis(500),
        };
        Scenario::new(scheme, source, "jobs", timing, &[])
    }

    fn src(&self) -> Vec<&str> {
        self.source.iter().map(String::as_str).collect()
    }

    /// `electop node --json` with this scenario's source and timing.
    fn start(&self, id: &str) -> Node {
        self.start_via(&self.source, id)
    }

    /// `start`, with other source flags (the same store through a `Proxy`).
    fn start_via(&self, source: &[String], id: &str) -> Node {
        let n = self.started.get();
        self.started.set(n + 1);
        let stderr_path = self.home.path().join(format!("{id}.{n}.stderr"));
        let mut cmd = command(self.home.path());
        cmd.args(source)
            .args(["node", "--election", &self.election, "--id", id, "--json"])
            .args(self.timing.args())
            .args(&self.node_flags);
        Node::spawn(&mut cmd, id, &self.election, stderr_path)
    }

    /// The leader `electop status --json` shows for the election.
    fn status_leader(&self) -> Option<String> {
        let s = status_json(self.home.path(), &self.src());
        election(&s, &self.election)["leader"]["id"]
            .as_str()
            .map(String::from)
    }

    /// `electop force-leader ELECTION ID --yes`, which must succeed. A SQL table keeps no
    /// line, so a follower was never seen there: `--allow-unseen` says it is meant.
    fn force_leader(&self, id: &str) {
        self.admin("force-leader", &[id, "--allow-unseen"]);
    }

    /// `electop ACTION ELECTION [ARGS] --yes`, which must succeed.
    fn admin(&self, action: &str, args: &[&str]) {
        let out = command(self.home.path())
            .args(&self.source)
            .args([action, &self.election])
            .args(args)
            .arg("--yes")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run electop {action}: {e}"));
        assert!(
            out.status.success(),
            "{}: {action} {args:?} failed ({}): {}{}",
            self.label,
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// Waits until one of `nodes` believes it leads; returns its index and the time from
/// `since` until its line was read.
fn wait_any_leader(nodes: &mut [Node], since: Instant, timeout: Duration) -> (usize, Duration) {
    common::wait_for("a node believes it leads", timeout, || {
        for n in nodes.iter_mut() {
            n.pump();
        }
        let leading: Vec<usize> = (0..nodes.len())
            .filter(|&i| nodes[i].believes("leader", None).is_some())
            .collect();
        let Some(&i) = leading.first() else {
            return Err(dump_all(nodes));
        };
        assert_eq!(
            leading.len(),
            1,
            "two nodes believe they lead at once:\n{}",
            dump_all(nodes)
        );
        let at = nodes[i].believes("leader", None).unwrap_or(since);
        Ok((i, at.saturating_duration_since(since)))
    })
}

/// Three nodes elect one leader; SIGKILL of it fails over within the timeout; SIGTERM of
/// the next resigns, so the last takes over at once; a forced leader is honoured.
fn lifecycle(sc: &Scenario) {
    let t = sc.timing;
    let label = &sc.label;

    // 1. Exactly one leader; the others follow it; status agrees.
    let mut nodes: Vec<Node> = ["node-a", "node-b", "node-c"]
        .iter()
        .map(|id| sc.start(id))
        .collect();
    let (first, _) = wait_any_leader(&mut nodes, Instant::now(), T);
    let leader = nodes[first].id.clone();
    for n in nodes.iter_mut().filter(|n| n.id != leader) {
        n.wait_belief("follower", Some(&leader), T);
    }
    for n in nodes.iter_mut() {
        n.pump();
    }
    for n in &nodes {
        let ever_led = n.beliefs().any(|v| v["belief"] == "leader");
        assert_eq!(
            ever_led,
            n.id == leader,
            "{label}: only {leader} ever believed it leads:\n{}",
            dump_all(&nodes)
        );
    }
    assert_eq!(
        nodes
            .iter()
            .filter(|n| n.believes("leader", None).is_some())
            .count(),
        1,
        "{label}: exactly one leader:\n{}",
        dump_all(&nodes)
    );
    assert_eq!(
        sc.status_leader().as_deref(),
        Some(leader.as_str()),
        "{label}: status shows the leader the nodes agree on"
    );

    // 2. SIGKILL the leader: one of the others takes over once the TTL/term/timeout ran out.
    let mut dead = nodes.remove(first);
    let killed = Instant::now();
    dead.sigkill();
    let bound = t.ttl + t.retry + SLACK;
    let (next, took) = wait_any_leader(&mut nodes, killed, bound + OVERRUN);
    let next_id = nodes[next].id.clone();
    println!(
        "{label}: failover after SIGKILL of the leader: {} ms (ttl {} ms, bound {} ms)",
        took.as_millis(),
        t.ttl.as_millis(),
        bound.as_millis()
    );
    assert!(
        took <= bound,
        "{label}: failover took {took:?}, more than {bound:?}:\n{}",
        dump_all(&nodes)
    );
    nodes[1 - next].wait_belief("follower", Some(&next_id), T);

    // 3. SIGTERM the new leader: it resigns and exits 0; the last one leads well before the
    // TTL would have run out.
    let mut resigning = nodes.remove(next);
    let mut last = nodes.remove(0);
    let sent = Instant::now();
    let (status, exited) = resigning.sigterm(EXIT);
    assert!(
        status.success(),
        "{label}: SIGTERM exits 0, got {status}; {}",
        resigning.dump()
    );
    assert!(
        resigning.events().any(|e| e == "resigned"),
        "{label}: the leader says it resigned; {}",
        resigning.dump()
    );
    assert!(
        resigning
            .current()
            .is_some_and(|(_, v)| v["belief"] == "stopped"),
        "{label}: the leader's last belief says it stopped, so no reader thinks it still leads; {}",
        resigning.dump()
    );
    let quick = t.retry + Duration::from_millis(800);
    assert!(quick < t.ttl, "the bound must tell a resign from a timeout");
    let at = last.wait_belief_at("leader", Some(&last.id.clone()), quick + OVERRUN);
    let took = at.saturating_duration_since(sent);
    println!(
        "{label}: after SIGTERM: exit in {} ms, {} leads after {} ms (bound {} ms)",
        exited.as_millis(),
        last.id,
        took.as_millis(),
        quick.as_millis()
    );
    assert!(
        took <= quick,
        "{label}: takeover after a resign took {took:?}, more than {quick:?}; {}",
        last.dump()
    );

    // 4. Force the follower to lead: it says so within a renew interval, the old leader
    // follows it, and it stays that way.
    let mut back = sc.start(&dead.id);
    back.wait_belief("follower", Some(&last.id.clone()), T);
    sc.force_leader(&back.id);
    let forced = Instant::now();
    let mut within = t.renew.max(t.retry) + SLACK;
    if label == "etcd-election" {
        // The deposed keys are held until their sessions' next keep-alive (a third of the TTL,
        // rounded up to a second, + 2 s) so nobody else is elected before they are told.
        within += Duration::from_secs(t.ttl.as_secs().div_ceil(3) + 2);
    }
    let took = back
        .wait_belief_at("leader", Some(&back.id.clone()), within + OVERRUN)
        .saturating_duration_since(forced);
    println!(
        "{label}: forced leader {} says it leads {} ms after force-leader returned",
        back.id,
        took.as_millis()
    );
    assert!(
        took <= within,
        "{label}: forced leader took {took:?}; {}",
        back.dump()
    );
    last.wait_belief("follower", Some(&back.id.clone()), within);
    let marks = [back.beliefs().count(), last.beliefs().count()];
    let until = Instant::now() + 2 * t.renew;
    back.read_until(until);
    last.read_until(until);
    for (n, mark) in [&back, &last].into_iter().zip(marks) {
        assert_eq!(
            n.beliefs().count(),
            mark,
            "{label}: no belief changes after the forced leader took over; {}",
            n.dump()
        );
    }
    assert_eq!(
        sc.status_leader().as_deref(),
        Some(back.id.as_str()),
        "{label}: status shows the forced leader two renew intervals later"
    );
}

#[test]
fn etcd_election_nodes() {
    let etcd = EtcdServer::start();
    lifecycle(&Scenario::etcd(&etcd, "etcd-election"));
}

#[test]
fn etcd_lease_key_nodes() {
    let etcd = EtcdServer::start();
    lifecycle(&Scenario::etcd(&etcd, "etcd-lease-key"));
}

#[test]
fn etcd_election_nodes_ride_out_an_etcd_outage() {
    let mut etcd = EtcdServer::start();
    let sc = Scenario::etcd(&etcd, "etcd-election");
    let mut nodes: Vec<Node> = ["node-a", "node-b"].iter().map(|id| sc.start(id)).collect();
    let (first, _) = wait_any_leader(&mut nodes, Instant::now(), T);
    let leader = nodes[first].id.clone();
    let before = leader.clone();
    nodes[1 - first].wait_belief("follower", Some(&leader), T);

    let stopping = Instant::now();
    etcd.stop();
    for n in nodes.iter_mut() {
        let at = n.wait_belief_at("no-contact", None, T);
        println!(
            "etcd-election: {} reports no-contact {} ms after etcd was told to stop",
            n.id,
            at.saturating_duration_since(stopping).as_millis()
        );
        let noticed = at.saturating_duration_since(stopping);
        let bound = sc.timing.renew + SLACK;
        assert!(
            noticed <= bound,
            "{} noticed the outage after {noticed:?}, more than {bound:?}",
            n.id
        );
        let (_, v) = n.current().expect("a belief");
        // In words, not the client's (`grpc request error: ... h2 protocol error: ...`).
        assert!(
            v["error"].as_str().is_some_and(|e| !e.is_empty()
                && !e.contains("grpc request error")
                && !e.contains("h2 protocol")),
            "no-contact says why, in words: {v}"
        );
    }

    etcd.restart();
    let restarted = Instant::now();
    let (first, took) = wait_any_leader(&mut nodes, restarted, T);
    let leader = nodes[first].id.clone();
    println!(
        "etcd-election: {leader} leads {} ms after etcd restarted",
        took.as_millis()
    );
    // The leases outlive the outage (etcd restores them with a fresh TTL) and the nodes take
    // them up again: the same leader, as soon as they reconnect (one retry).
    assert_eq!(
        leader,
        before,
        "the leader kept its lease and its place:\n{}",
        dump_all(&nodes)
    );
    let bound = sc.timing.retry + SLACK;
    assert!(
        took <= bound,
        "re-election after the restart took {took:?}, more than {bound:?}:\n{}",
        dump_all(&nodes)
    );
    nodes[1 - first].wait_belief("follower", Some(&leader), T);
    assert_eq!(sc.status_leader().as_deref(), Some(leader.as_str()));
}

fn sql_lease(store: Store, name: &str) {
    // The nodes create the table (gabihodoroaga/leaderelection's leaderlock) themselves.
    let sc = sql_lease_scenario(
        &format!("sql-lease/{name}"),
        &store,
        "--scheme",
        "sql-lease",
    );
    lifecycle(&sc);
}

/// Nodes of election `jobs` on `store`'s sql-lease table (`flag value`: `--scheme
/// sql-lease` or a `--preset`), which they create, with a 2 s term.
fn sql_lease_scenario(name: &str, store: &Store, flag: &str, value: &str) -> Scenario {
    Scenario::new(
        name,
        ["--sql", &store.url(), flag, value]
            .map(String::from)
            .into(),
        "jobs",
        Timing {
            ttl: Duration::from_secs(2),
            renew: Duration::from_millis(500),
            retry: Duration::from_millis(300),
        },
        &["--create-table"],
    )
}

fn sql_heartbeat(store: Store, name: &str) {
    // the MySQL election article's own table; the election is the anchor.
    store.create_heartbeat_table("service_election");
    let sc = Scenario::new(
        &format!("sql-heartbeat/{name}"),
        [
            "--sql",
            &store.url(),
            "--scheme",
            "sql-heartbeat",
            "--heartbeat-timeout",
            "2s",
        ]
        .map(String::from)
        .into(),
        "1",
        Timing {
            ttl: Duration::from_secs(2),
            renew: Duration::from_millis(300),
            retry: Duration::from_millis(300),
        },
        &[],
    );
    lifecycle(&sc);
}

#[test]
fn sql_lease_sqlite_nodes() {
    sql_lease(Store::sqlite(), "sqlite");
}

/// A preset names the scheme and the table: `node --preset shedlock` needs no --scheme, and
/// the nodes write ShedLock's columns, which `--preset shedlock` reads.
#[test]
fn preset_nodes_on_sqlite() {
    let store = Store::sqlite();
    let sc = sql_lease_scenario("preset shedlock/sqlite", &store, "--preset", "shedlock");
    lifecycle(&sc);
}

#[test]
fn sql_lease_postgres_nodes() {
    sql_lease(Store::postgres(), "postgres");
}

#[test]
fn sql_lease_mariadb_nodes() {
    sql_lease(Store::mariadb(), "mariadb");
}

#[test]
fn sql_heartbeat_sqlite_nodes() {
    sql_heartbeat(Store::sqlite(), "sqlite");
}

#[test]
fn sql_heartbeat_postgres_nodes() {
    sql_heartbeat(Store::postgres(), "postgres");
}

#[test]
fn sql_heartbeat_mariadb_nodes() {
    sql_heartbeat(Store::mariadb(), "mariadb");
}

/// The store's port in `source` flags, replaced by `port`.
fn via_port(source: &[String], from: u16, to: u16) -> Vec<String> {
    let (a, b) = (format!(":{from}"), format!(":{to}"));
    let via: Vec<String> = source.iter().map(|s| s.replace(&a, &b)).collect();
    assert_ne!(via, source, "the port {from} appears in {source:?}");
    via
}

/// The leader reaches the store through a proxy that is then cut. The store's timeout hands
/// leadership to the other node; the cut-off one must stop believing it leads by the time its
/// own lease/term has run out (it cannot have renewed it), and SIGTERM must still end it
/// promptly (the resign cannot get through, but it must not wait forever).
fn cut_off_leader(sc: &Scenario, store_port: u16) {
    let t = sc.timing;
    let label = &sc.label;
    let proxy = Proxy::start(store_port, PROXY_LIFETIME);
    let via = via_port(&sc.source, store_port, proxy.port());
    let mut a = sc.start_via(&via, "node-a");
    a.wait_belief("leader", Some("node-a"), T);
    let mut b = sc.start("node-b");
    b.wait_belief("follower", Some("node-a"), T);

    proxy.freeze();
    let cut = Instant::now();
    let bound = t.ttl + t.retry + SLACK;
    let took = b
        .wait_belief_at("leader", Some("node-b"), bound + OVERRUN)
        .saturating_duration_since(cut);
    println!(
        "{label}: the other node leads {} ms after the leader was cut off",
        took.as_millis()
    );
    assert!(
        took <= bound,
        "{label}: takeover took {took:?}; {}",
        b.dump()
    );

    let mut problems = Vec::new();
    // It cannot have renewed since the cut, so its lease/term is over by cut + ttl.
    a.read_until(cut + t.ttl + SLACK);
    if a.believes("leader", None).is_some() {
        problems.push(format!(
            "node-a still believes it leads {:?} after it was cut off from the store, while \
             node-b leads too",
            cut.elapsed()
        ));
    }
    let sent = Instant::now();
    let _ = Command::new("kill")
        .args(["-TERM", &a.child.id().to_string()])
        .status();
    let deadline = sent + EXIT;
    let exited = loop {
        match a.child.try_wait().expect("try_wait") {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => break None,
            None => std::thread::sleep(POLL_INTERVAL),
        }
    };
    if let Some(status) = exited {
        a.read_until(Instant::now() + EXIT);
        println!(
            "{label}: the cut-off node exited {status} {} ms after SIGTERM",
            sent.elapsed().as_millis()
        );
    } else {
        problems.push(format!(
            "node-a did not exit within {EXIT:?} of SIGTERM (its resign waits for the store)"
        ));
    }
    assert!(
        problems.is_empty(),
        "{label}:\n  {}\n{}",
        problems.join("\n  "),
        a.dump()
    );
}

#[test]

fn etcd_election_leader_cut_off_from_the_store() {
    let etcd = EtcdServer::start();
    cut_off_leader(&Scenario::etcd(&etcd, "etcd-election"), etcd.client_port());
}

#[test]

fn etcd_lease_key_leader_cut_off_from_the_store() {
    let etcd = EtcdServer::start();
    cut_off_leader(&Scenario::etcd(&etcd, "etcd-lease-key"), etcd.client_port());
}

fn store_port(store: &Store) -> u16 {
    match store {
        Store::Pg(p) => p.port(),
        Store::My(m) => m.port(),
        Store::Sqlite { .. } => panic!("SQLite has no port"),
    }
}

#[test]
fn sql_lease_leader_cut_off_from_postgres() {
    let store = Store::postgres();
    let sc = sql_lease_scenario("sql-lease/postgres", &store, "--scheme", "sql-lease");
    cut_off_leader(&sc, store_port(&store));
}

#[test]

fn sql_heartbeat_leader_cut_off_from_mariadb() {
    let store = Store::mariadb();
    store.create_heartbeat_table("service_election");
    let sc = Scenario::new(
        "sql-heartbeat/mariadb",
        [
            "--sql",
            &store.url(),
            "--scheme",
            "sql-heartbeat",
            "--heartbeat-timeout",
            "2s",
        ]
        .map(String::from)
        .into(),
        "1",
        Timing {
            ttl: Duration::from_secs(2),
            renew: Duration::from_millis(300),
            retry: Duration::from_millis(300),
        },
        &[],
    );
    cut_off_leader(&sc, store_port(&store));
}

/// etcd lease TTLs are whole seconds. A TTL that is not must not end up shorter than the
/// renew interval (`--ttl 1500ms --renew 1200ms` passes the renew < ttl check): either
/// refuse it or round up; a lone node must then keep its lease and lead without a break.
#[test]

fn etcd_sub_second_ttl_is_not_truncated_below_renew() {
    let etcd = EtcdServer::start();
    for scheme in ["etcd-election", "etcd-lease-key"] {
        let mut sc = Scenario::etcd(&etcd, scheme);
        sc.timing = Timing {
            ttl: Duration::from_millis(1500),
            renew: Duration::from_millis(1200),
            retry: Duration::from_millis(500),
        };
        let mut a = sc.start("node-a");
        // Refused at start: acceptable (it must say why, and exit non-zero).
        let deadline = Instant::now() + Duration::from_secs(2);
        a.read_until(deadline);
        if let Ok(Some(status)) = a.child.try_wait() {
            assert!(
                !status.success(),
                "{scheme}: exited 0 at start; {}",
                a.dump()
            );
            continue;
        }
        a.wait_belief("leader", Some("node-a"), T);
        a.read_until(Instant::now() + Duration::from_secs(4));
        let ended: Vec<&str> = a.events().filter(|e| e.contains("lease ended")).collect();
        assert!(
            ended.is_empty(),
            "{scheme}: a lone node lost its lease between renewals: {ended:?}; {}",
            a.dump()
        );
    }
}

/// The most a proxy delays one direction in the slow-store test. A round of a sql-lease node
/// is some six round trips (a ping on acquire, and each statement's prepare and execute), and
/// must fit in its call limit (`ttl - renew`) most of the time for leadership to last.
const MAX_DELAY: Duration = Duration::from_millis(250);

fn at(v: &Value) -> OffsetDateTime {
    let s = v["at"].as_str().unwrap_or_default();
    OffsetDateTime::parse(s, &Rfc3339).unwrap_or_else(|e| panic!("bad `at` in {v}: {e}"))
}

/// A node's leadership as its own belief lines tell it: from each `leader` line's `at` to
/// the next belief line's, or to `observed` if it still leads.
fn leader_intervals(
    node: &Node,
    observed: OffsetDateTime,
) -> Vec<(OffsetDateTime, OffsetDateTime)> {
    let mut out = Vec::new();
    let mut since = None;
    for v in node.beliefs() {
        match (since, v["belief"] == "leader") {
            (None, true) => since = Some(at(v)),
            (Some(start), false) => {
                out.push((start, at(v)));
                since = None;
            }
            _ => {}
        }
    }
    if let Some(start) = since {
        out.push((start, observed));
    }
    out
}

/// Compares every node's leader intervals with every other's: no instant may lie in two.
/// Returns how many intervals there were.
fn assert_never_two_leaders(nodes: &[Node], observed: OffsetDateTime) -> usize {
    let all: Vec<(&str, OffsetDateTime, OffsetDateTime)> = nodes
        .iter()
        .flat_map(|n| {
            leader_intervals(n, observed)
                .into_iter()
                .map(move |(s, e)| (n.id.as_str(), s, e))
        })
        .collect();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            let overlap = a.1.max(b.1) < a.2.min(b.2);
            assert!(
                a.0 == b.0 || !overlap,
                "{} led {} .. {} and {} led {} .. {}: both at once for {}\n{}",
                a.0,
                a.1,
                a.2,
                b.0,
                b.1,
                b.2,
                a.2.min(b.2) - a.1.max(b.1),
                dump_all(nodes)
            );
        }
    }
    all.len()
}

/// Reads every node's lines until `until`.
fn observe(nodes: &mut [Node], until: Instant) {
    while Instant::now() < until {
        for n in nodes.iter_mut() {
            n.pump();
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Waits until a node other than `except` believes it leads; returns its index.
fn wait_new_leader(nodes: &mut [Node], except: Option<usize>, timeout: Duration) -> usize {
    let what = format!("a new leader (the old one: {except:?})");
    common::wait_for(&what, timeout, || {
        for n in nodes.iter_mut() {
            n.pump();
        }
        (0..nodes.len())
            .find(|&i| Some(i) != except && nodes[i].believes("leader", None).is_some())
            .ok_or_else(|| dump_all(nodes))
    })
}

/// Three nodes, each through its own proxy. Each round delays every direction at random
/// (0..MAX_DELAY) for a term, then slows the leader alone, then freezes its proxy until
/// another node leads. Compared across processes, no two belief intervals of leadership
/// overlap.
fn never_both_lead(sc: &Scenario, store_port: u16, rounds: usize) {
    let label = &sc.label;
    let proxies: Vec<Proxy> = (0..3)
        .map(|_| Proxy::start(store_port, PROXY_LIFETIME))
        .collect();
    let mut nodes: Vec<Node> = ["node-a", "node-b", "node-c"]
        .iter()
        .zip(&proxies)
        .map(|(id, p)| sc.start_via(&via_port(&sc.source, store_port, p.port()), id))
        .collect();
    // Connecting takes a dozen round trips: each node connects before the delays start, and
    // again (undelayed) after its freeze.
    let connected = |n: &mut Node| {
        n.wait_belief_at("follower", None, T);
    };
    let mut leader = wait_new_leader(&mut nodes, None, T);
    for (i, n) in nodes.iter_mut().enumerate() {
        if i != leader {
            connected(n);
        }
    }
    for p in &proxies {
        p.delay_both(Duration::ZERO, MAX_DELAY);
    }
    for round in 0..rounds {
        // Several renewals through the slow proxies.
        observe(&mut nodes, Instant::now() + sc.timing.ttl);
        leader = wait_new_leader(&mut nodes, None, T);
        // The case: the leader alone is slow (its answers come back late), the
        // others are prompt to take over the moment the store's term ends; then it freezes.
        for (i, p) in proxies.iter().enumerate() {
            let d = if i == leader {
                MAX_DELAY
            } else {
                Duration::ZERO
            };
            p.delay_both(d, d);
        }
        observe(&mut nodes, Instant::now() + 4 * sc.timing.renew);
        leader = wait_new_leader(&mut nodes, None, T);
        proxies[leader].freeze();
        let frozen = Instant::now();
        let next = wait_new_leader(&mut nodes, Some(leader), T + sc.timing.ttl);
        println!(
            "{label}: round {round}: {} froze, {} leads {} ms later",
            nodes[leader].id,
            nodes[next].id,
            frozen.elapsed().as_millis()
        );
        proxies[leader].delay_both(Duration::ZERO, Duration::ZERO);
        proxies[leader].thaw();
        connected(&mut nodes[leader]);
        for p in &proxies {
            p.delay_both(Duration::ZERO, MAX_DELAY);
        }
    }
    let observed = OffsetDateTime::now_utc();
    for n in nodes.iter_mut() {
        n.read_until(Instant::now() + Duration::from_millis(200));
    }
    let intervals = assert_never_two_leaders(&nodes, observed);
    let leaders = nodes
        .iter()
        .filter(|n| !leader_intervals(n, observed).is_empty())
        .count();
    assert!(
        intervals > rounds && leaders >= 2,
        "{label}: leadership never changed hands ({intervals} intervals):\n{}",
        dump_all(&nodes)
    );
    let _ = leader;
}

/// The measurement: a leader 0.4 s from PostgreSQL each way, then frozen, believed
/// it led for 2 s past its term. With random delays and freezes, no two sql-lease nodes
/// ever believe they lead at the same instant.
#[test]
fn sql_lease_nodes_never_both_lead_through_a_slow_store() {
    let store = Store::postgres();
    let sc = Scenario::new(
        "sql-lease/postgres (slow)",
        ["--sql", &store.url(), "--scheme", "sql-lease"]
            .map(String::from)
            .into(),
        "jobs",
        Timing {
            ttl: Duration::from_secs(4),
            renew: Duration::from_millis(500),
            retry: Duration::from_millis(300),
        },
        &["--create-table"],
    );
    never_both_lead(&sc, store_port(&store), 3);
}

/// The same through etcd: an etcd-lease-key leader's belief is bounded by its lease, counted
/// from the keep-alive's send.
#[test]
fn etcd_lease_key_nodes_never_both_lead_through_a_slow_store() {
    let etcd = EtcdServer::start();
    let mut sc = Scenario::etcd(&etcd, "etcd-lease-key");
    sc.label = "etcd-lease-key (slow)".into();
    sc.timing = Timing {
        ttl: Duration::from_secs(4),
        renew: Duration::from_millis(500),
        retry: Duration::from_millis(300),
    };
    never_both_lead(&sc, etcd.client_port(), 3);
}

/// On its scheme's own timing (etcdctl elect's 60 s lease, renewed every 20 s) a node's
/// connection idles between renewals: it keeps its lead with no belief change. (It lost
/// contact every 3 s: etcd closed the connection for its keep-alive pings, GOAWAY
/// `too_many_pings`, and the node told "lost contact with the store" then "leader" again.)
#[test]
fn an_etcd_node_on_its_default_timing_keeps_its_lead() {
    let etcd = EtcdServer::start();
    let home = common::scratch::tempdir();
    let mut cmd = command(home.path());
    cmd.args(["--etcd", &etcd.endpoint(), "--prefix", "/dflt/"])
        .args(["--scheme", "etcd-election", "node", "--election", "jobs"])
        .args(["--id", "node-a", "--json"]);
    let stderr = home.path().join("node-a.stderr");
    let mut node = Node::spawn(&mut cmd, "node-a", "jobs", stderr);
    node.wait_belief("leader", Some("node-a"), T);
    // Three times as long as etcd let it ping before.
    node.read_until(Instant::now() + Duration::from_secs(9));
    assert_eq!(node.beliefs().count(), 1, "only `leader`: {}", node.dump());
    let (status, _) = node.sigterm(T);
    assert!(status.success(), "{}", node.dump());
}
