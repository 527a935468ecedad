//! Every way an operator, or any other writer of the store, can depose an `electop node`
//! leader, in every scheme: its key deleted (a resign), its lease revoked (a forced
//! re-election), its key or row given to another (force-leader, a plain write) or deleted.
//! The leader's next belief line must be `deposed`, with why, within one renew interval of
//! the change. And an etcd-election candidate whose key is deleted while it waits in line
//! must not take the keys ahead going away for its election (etcd's Go and Node clients do).

use super::*;

/// What a deposed leader may take beyond its renew interval to say so: the writer's process
/// exiting, the renewal's statements, the line's way through the pipe.
const NOTICE_SLACK: Duration = Duration::from_millis(300);

/// One way of deposing the leader: its name, and the store change, given the leader's id.
type Way<'a> = (&'static str, Box<dyn Fn(&str) + 'a>);

/// The node ids of these tests: two, so "the other one" is known.
const IDS: [&str; 2] = ["node-a", "node-b"];

fn other(id: &str) -> &'static str {
    if id == IDS[0] { IDS[1] } else { IDS[0] }
}

/// Waits until exactly one node believes it leads and every other follows it; its index.
fn settled(nodes: &mut [Node], timeout: Duration) -> usize {
    let deadline = Instant::now() + timeout;
    loop {
        for n in nodes.iter_mut() {
            n.pump();
        }
        let leaders: Vec<usize> = (0..nodes.len())
            .filter(|&i| nodes[i].believes("leader", None).is_some())
            .collect();
        if let [i] = leaders[..] {
            let id = nodes[i].id.clone();
            let follow = |n: &Node| n.id == id || n.believes("follower", Some(&id)).is_some();
            if nodes.iter().all(follow) {
                return i;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no settled leader within {timeout:?}:\n{}",
            dump_all(nodes)
        );
        std::thread::sleep(POLL_INTERVAL);
    }
}

impl Node {
    /// Reads lines until one after the first `mark` lines is `wanted`, or `timeout` passed.
    fn read_until_line(&mut self, mark: usize, wanted: impl Fn(&Value) -> bool, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        self.pump();
        while !self.seen[mark..].iter().any(|(_, v)| wanted(v)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.record(line),
                Err(_) => return,
            }
        }
    }

    /// The first belief line after the first `mark` lines, waiting up to `timeout` for it.
    fn belief_after(&mut self, mark: usize, timeout: Duration) -> Option<(Instant, Value)> {
        let deadline = Instant::now() + timeout;
        self.pump();
        loop {
            let found = self.seen[mark..]
                .iter()
                .find(|(_, v)| v.get("belief").is_some());
            if let Some((at, v)) = found {
                return Some((*at, v.clone()));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.record(line),
                Err(_) => return None,
            }
        }
    }
}

/// Deposes the leader each way in turn. The ways in `alone` run on a lone node: with nobody
/// to take over, only its own noticing can end its belief. Then a second node joins for the
/// ways in `with_other`, which hand leadership to it. Last, SIGTERM of the leader: its last
/// belief line must say it stopped.
fn depose_each_way(sc: &Scenario, alone: &[Way], with_other: &[Way]) {
    let mut nodes = vec![sc.start(IDS[0])];
    let mut problems = depose(sc, &mut nodes, alone);
    nodes.push(sc.start(IDS[1]));
    problems.extend(depose(sc, &mut nodes, with_other));
    for n in &nodes {
        // Behind its own old key (held by an operator's action) nobody leads.
        if let Some(v) = n.beliefs().find(|v| is_belief(v, "follower", Some(&n.id))) {
            problems.push(format!("{} said it follows itself: {v}", n.id));
        }
    }
    let i = settled(&mut nodes, T + sc.timing.ttl);
    nodes[i].sigterm(EXIT);
    if !nodes[i]
        .current()
        .is_some_and(|(_, v)| v["belief"] == "stopped")
    {
        problems.push(format!(
            "{}: its last belief after SIGTERM is not stopped",
            nodes[i].id
        ));
    }
    assert!(
        problems.is_empty(),
        "{}:\n  {}\n{}",
        sc.label,
        problems.join("\n  "),
        dump_all(&nodes)
    );
}

/// Each way in turn, once the nodes settled on a leader: the leader's next belief line must
/// not be `leader`, and must be read within a renew interval (+ slack) of the change; it
/// should be `deposed`, with why. Returns what went wrong.
fn depose(sc: &Scenario, nodes: &mut [Node], ways: &[Way]) -> Vec<String> {
    let bound = sc.timing.renew + NOTICE_SLACK;
    let mut problems = Vec::new();
    for (way, act) in ways {
        let i = settled(nodes, T + sc.timing.ttl);
        let leader = nodes[i].id.clone();
        let mark = nodes[i].seen.len();
        let started = Instant::now();
        act(&leader);
        let done = Instant::now();
        let Some((at, v)) = nodes[i].belief_after(mark, bound + OVERRUN) else {
            problems.push(format!(
                "{way}: {leader} still believes it leads {:?} after the change",
                bound + OVERRUN
            ));
            continue;
        };
        let took = at.saturating_duration_since(done);
        println!(
            "{}: {way}: {leader} says {} {} ms after the change ({} ms after the writer \
             started): {}",
            sc.label,
            v["belief"],
            took.as_millis(),
            at.saturating_duration_since(started).as_millis(),
            v["reason"]
        );
        if v["belief"] == "leader" {
            problems.push(format!("{way}: {leader} said it leads again, first: {v}"));
        } else if v["belief"] != "deposed" || v["reason"].as_str().is_none_or(str::is_empty) {
            problems.push(format!("{way}: {leader} said {v}, not deposed with why"));
        }
        if took > bound {
            problems.push(format!(
                "{way}: {leader} said so after {took:?}, more than {bound:?}"
            ));
        }
    }
    problems
}

fn force_leader_of_the_other(sc: &Scenario) -> [Way<'_>; 1] {
    [(
        "electop force-leader of the other",
        Box::new(|id| sc.force_leader(other(id))),
    )]
}

/// The key of `id` in an etcd-election line, and its lease (the key's last part, in hex).
fn election_key(etcd: &EtcdServer, dir: &str, id: &str) -> (String, String) {
    let line = etcd.get_prefix(dir);
    let (key, _) = line
        .iter()
        .find(|(_, v)| v == id)
        .unwrap_or_else(|| panic!("no key of {id} in {line:?}"));
    let lease = key.rsplit('/').next().unwrap_or_default().to_string();
    (key.clone(), lease)
}

#[test]
fn etcd_election_leader_notices_every_way_it_is_deposed() {
    let etcd = EtcdServer::start();
    let sc = Scenario::etcd(&etcd, "etcd-election");
    let dir = "/elect/jobs/";
    let ways: Vec<Way> = vec![
        ("electop resign", Box::new(|_| sc.admin("resign", &[]))),
        (
            "etcdctl del of its key",
            Box::new(|id| {
                etcd.etcdctl(&["del", &election_key(&etcd, dir, id).0]);
            }),
        ),
        ("electop reelect", Box::new(|_| sc.admin("reelect", &[]))),
        (
            "etcdctl lease revoke",
            Box::new(|id| {
                etcd.etcdctl(&["lease", "revoke", &election_key(&etcd, dir, id).1]);
            }),
        ),
    ];
    depose_each_way(&sc, &ways, &force_leader_of_the_other(&sc));
}

/// The lease of the key `key` (etcdctl takes it in hex).
fn key_lease(etcd: &EtcdServer, key: &str) -> String {
    let out = etcd.etcdctl_stdout(&["get", key, "-w", "json"]);
    let v: Value = serde_json::from_str(&out).expect("etcdctl get -w json");
    let lease = v["kvs"][0]["lease"]
        .as_i64()
        .unwrap_or_else(|| panic!("{key} has no lease: {v}"));
    format!("{lease:x}")
}

#[test]
fn etcd_lease_key_leader_notices_every_way_it_is_deposed() {
    let etcd = EtcdServer::start();
    let sc = Scenario::etcd(&etcd, "etcd-lease-key");
    let key = "/lead/jobs";
    let ways: Vec<Way> = vec![
        ("electop resign", Box::new(|_| sc.admin("resign", &[]))),
        ("electop reelect", Box::new(|_| sc.admin("reelect", &[]))),
        (
            "etcdctl del of the key",
            Box::new(|_| {
                etcd.etcdctl(&["del", key]);
            }),
        ),
        (
            "etcdctl lease revoke",
            Box::new(|_| {
                etcd.etcdctl(&["lease", "revoke", &key_lease(&etcd, key)]);
            }),
        ),
    ];
    depose_each_way(&sc, &ways, &force_leader_of_the_other(&sc));
}

/// The admin actions, then the store's own client: the row given to a node that does not
/// run, and the row deleted. None needs a second node.
fn sql_ways<'a>(
    sc: &'a Scenario,
    store: &'a Store,
    table: &'a str,
    holder: &'a str,
) -> Vec<Way<'a>> {
    vec![
        ("electop resign", Box::new(|_| sc.admin("resign", &[]))),
        ("electop reelect", Box::new(|_| sc.admin("reelect", &[]))),
        (
            "electop force-leader of a node that does not run",
            Box::new(|_| sc.force_leader("node-x")),
        ),
        (
            "an UPDATE naming another leader",
            Box::new(move |_| {
                store.exec(&format!("UPDATE {table} SET {holder} = 'node-x'"));
            }),
        ),
        (
            "a DELETE of the row",
            Box::new(move |_| {
                store.exec(&format!("DELETE FROM {table}"));
            }),
        ),
    ]
}

/// Both SQL schemes on one store.
fn sql_leaders_notice_every_way_they_are_deposed(store: Store, name: &str) {
    let timing = Timing {
        ttl: Duration::from_secs(2),
        renew: Duration::from_millis(500),
        retry: Duration::from_millis(300),
    };
    let sc = Scenario::new(
        &format!("sql-lease/{name}"),
        ["--sql", &store.url(), "--scheme", "sql-lease"]
            .map(String::from)
            .into(),
        "jobs",
        timing,
        &["--create-table"],
    );
    let ways = sql_ways(&sc, &store, "leaderlock", "leader_id");
    depose_each_way(&sc, &ways, &force_leader_of_the_other(&sc));

    store.create_heartbeat_table("service_election");
    let source = [
        "--sql",
        &store.url(),
        "--scheme",
        "sql-heartbeat",
        "--heartbeat-timeout",
        "2s",
    ];
    let sc = Scenario::new(
        &format!("sql-heartbeat/{name}"),
        source.map(String::from).into(),
        "1",
        Timing {
            renew: Duration::from_millis(300),
            ..timing
        },
        &[],
    );
    let ways = sql_ways(&sc, &store, "service_election", "service_id");
    depose_each_way(&sc, &ways, &force_leader_of_the_other(&sc));
}

#[test]
fn sql_leaders_on_postgres_notice_every_way_they_are_deposed() {
    sql_leaders_notice_every_way_they_are_deposed(Store::postgres(), "postgres");
}

#[test]
fn sql_leaders_on_mariadb_notice_every_way_they_are_deposed() {
    sql_leaders_notice_every_way_they_are_deposed(Store::mariadb(), "mariadb");
}

#[test]
fn sql_leaders_on_sqlite_notice_every_way_they_are_deposed() {
    sql_leaders_notice_every_way_they_are_deposed(Store::sqlite(), "sqlite");
}

/// The case: a candidate whose key is deleted while it waits behind others, then the
/// keys ahead deleted too. It must say at once that it left the line and joined it again, and
/// print no leader line before that; whoever leads in the end is first in etcd's line.
#[test]
fn etcd_election_candidate_removed_while_waiting_never_claims_leadership() {
    let etcd = EtcdServer::start();
    let mut sc = Scenario::etcd(&etcd, "etcd-election");
    sc.election = "waiting".into();
    let dir = "/elect/waiting/";
    let mut nodes: Vec<Node> = ["node-a", "node-b", "node-c"]
        .iter()
        .map(|id| sc.start(id))
        .collect();
    settled(&mut nodes, T);
    let line = etcd.get_prefix(dir);
    assert_eq!(line.len(), 3, "three keys in line: {line:?}");
    let last = nodes
        .iter()
        .position(|n| n.id == line[2].1)
        .expect("the last key is a node's");
    let mark = nodes[last].seen.len();
    etcd.etcdctl(&["del", &line[2].0]);
    let removed = Instant::now();
    for (key, _) in &line[..2] {
        etcd.etcdctl(&["del", key]);
    }
    let bound = sc.timing.renew + NOTICE_SLACK;
    let rejoined = |v: &Value| {
        v["event"]
            .as_str()
            .is_some_and(|e| e.contains("joined it again"))
    };
    let n = &mut nodes[last];
    n.read_until_line(mark, rejoined, bound + OVERRUN);
    let after = &n.seen[mark..];
    let Some(i) = after.iter().position(|(_, v)| rejoined(v)) else {
        panic!(
            "{} never said its key was deleted and it joined the line again:\n{}",
            n.id,
            n.dump()
        );
    };
    let took = after[i].0.saturating_duration_since(removed);
    println!(
        "etcd-election: {} joined the line again {} ms after its key was deleted",
        n.id,
        took.as_millis(),
    );
    assert!(
        !after[..i].iter().any(|(_, v)| v["belief"] == "leader"),
        "{} claimed leadership before it joined the line again:\n{}",
        n.id,
        n.dump()
    );
    assert!(
        took <= bound,
        "{} noticed after {took:?}, more than {bound:?}",
        n.id
    );
    // The last delete may still be on its way to the nodes: they agree on the leader etcd's
    // line has first once they have all seen it.
    let deadline = Instant::now() + T;
    loop {
        let leader = settled(&mut nodes, T);
        let first = etcd.get_prefix(dir).first().map(|(_, v)| v.clone());
        if first.as_deref() == Some(nodes[leader].id.as_str()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the nodes agree that {} leads, etcd's line has {first:?} first:\n{}",
            nodes[leader].id,
            dump_all(&nodes)
        );
        std::thread::sleep(POLL_INTERVAL);
    }
}
