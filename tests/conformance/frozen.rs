//! (8) `member_frozen`: a member of a three-member cluster (etcd, ZooKeeper) frozen
//! (SIGSTOP) under the observers: a stopped process still accepts TCP connections, so
//! nothing is refused; the observers must give up on it and read through a live member,
//! and show a leader change made through the live members within 2 s.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::T;
use crate::scenarios::{SLACK, changes, each_list, fresh, gap, handover, two_nodes};
use crate::servers::{ETCD_CLUSTER, ZK_ENSEMBLE};
use crate::stores::{Cell, Kind, names};
use crate::views::{Observers, View, dump, status_json_view, status_table_view};

/// How long a read through the frozen member may take to move to a live one: electop
/// gives a member up to min(its timeout, 2 s) to answer, so a `status --timeout 2s`
/// (the other scenarios' views) may spend it all on the frozen member.
const MOVE_WITHIN: Duration = Duration::from_secs(2);

/// Held through a cell, per cluster (the etcd cells share one, the ZooKeeper cells another).
static ETCD_FROZEN: Mutex<()> = Mutex::new(());
static ZK_FROZEN: Mutex<()> = Mutex::new(());

fn is_etcd(kind: Kind) -> bool {
    matches!(kind, Kind::etcd_election | Kind::etcd_lease_key)
}

/// The members' `127.0.0.1:PORT`, a raft follower first for etcd (see `member_frozen`).
fn endpoints(kind: Kind) -> Vec<String> {
    if !is_etcd(kind) {
        return ZK_ENSEMBLE.with(|z| z.endpoints());
    }
    let (eps, status) = ETCD_CLUSTER.with(|c| {
        let status = c.etcdctl(&[0, 1, 2], &["endpoint", "status", "-w", "json"]);
        (c.endpoints(), status)
    });
    let status: Value = serde_json::from_str(&status).expect("endpoint status JSON");
    let leads = |ep: &str| {
        status.as_array().into_iter().flatten().any(|s| {
            s["Endpoint"].as_str().is_some_and(|e| e.ends_with(ep))
                && s["Status"]["leader"] == s["Status"]["header"]["member_id"]
        })
    };
    let (mut order, leader): (Vec<String>, Vec<String>) = eps.into_iter().partition(|e| !leads(e));
    order.extend(leader);
    order
}

fn port(ep: &str) -> u16 {
    ep.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("HOST:PORT")
}

/// SIGSTOP (`true`) or SIGCONT member `ep`.
fn freeze(kind: Kind, ep: &str, stop: bool) {
    if is_etcd(kind) {
        ETCD_CLUSTER.with(|c| {
            let i = c
                .endpoints()
                .iter()
                .position(|e| e == ep)
                .expect("a member");
            c.freeze(i, stop)
        })
    } else {
        ZK_ENSEMBLE.with(|z| {
            let i = z
                .endpoints()
                .iter()
                .position(|e| e == ep)
                .expect("a member");
            z.freeze(i, stop)
        })
    }
}

/// Thaws the member when dropped, a failed cell's too: the cluster serves other cells.
struct Thaw(Kind, String);

impl Drop for Thaw {
    fn drop(&mut self) {
        freeze(self.0, &self.1, false);
    }
}

/// Process `pid`'s established TCP connections: (local port, peer port).
fn connections(pid: u32) -> Vec<(u16, u16)> {
    let out = std::process::Command::new("ss")
        .args(["-tnpH"])
        .output()
        .expect("run ss");
    let mark = format!("pid={pid},");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("ESTAB") && l.contains(&mark))
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            Some((port(cols.get(3)?), port(cols.get(4)?)))
        })
        .collect()
}

/// The member (index in `eps`) process `pid` reads through. ZooKeeper: the one whose
/// `cons` lists a session on one of its connections. etcd: each process holds one
/// connection to every member for its member probe, and one more to the member it reads
/// through.
fn reads_through(kind: Kind, pid: u32, eps: &[String]) -> Option<usize> {
    let conns = connections(pid);
    let to = |ep: &str| {
        let p = port(ep);
        conns.iter().filter(move |(_, peer)| *peer == p)
    };
    if is_etcd(kind) {
        let counts: Vec<usize> = eps.iter().map(|ep| to(ep).count()).collect();
        let most = *counts.iter().max()?;
        let at: Vec<usize> = (0..eps.len()).filter(|&i| counts[i] == most).collect();
        return (most > 1 && at.len() == 1).then(|| at[0]);
    }
    eps.iter().position(|ep| {
        let cons = crate::common::zookeeper::four_letter(port(ep), "cons").unwrap_or_default();
        to(ep).any(|(local, _)| {
            cons.lines()
                .any(|l| l.contains(&format!(":{local}[")) && l.contains("sid=0x"))
        })
    })
}

/// The member serve and watch both read through, a follower of the quorum where the
/// store lets the observers be placed (ZooKeeper dials a member picked by the process id:
/// they are started again until they share one).
fn observed_member(kind: Kind, cell: &Cell, obs: &mut Observers, eps: &[String]) -> usize {
    let follower =
        |i: usize| is_etcd(kind) || ZK_ENSEMBLE.with(|z| z.mode(i)).as_deref() == Some("follower");
    let find = |pid: u32| {
        crate::common::wait_for("the member an observer reads through", T, || {
            reads_through(kind, pid, eps).ok_or_else(|| format!("{:?}", connections(pid)))
        })
    };
    for _ in 0..6 {
        let serve = find(obs.pids().0);
        if !follower(serve) {
            *obs = Observers::start(cell, &cell.source, true);
            continue;
        }
        for _ in 0..12 {
            if find(obs.pids().1) == serve {
                return serve;
            }
            obs.restart_watch(cell);
        }
        println!("{kind:?}: watch reads through another member than serve; serve's frozen");
        return serve;
    }
    panic!("{kind:?}: serve never read through a follower")
}

/// When each view of the running watch and serve first showed `leader` (read every
/// 50 ms). Panics after `deadline`.
fn first_shown(
    obs: &mut Observers,
    leader: &str,
    deadline: Instant,
) -> Vec<(&'static str, Instant)> {
    let mut seen: Vec<(&'static str, Instant)> = Vec::new();
    loop {
        let views = obs.read_running();
        let now = Instant::now();
        for v in &views {
            let shows = v.leader.as_deref().is_some_and(|l| names(l, leader));
            if shows && !seen.iter().any(|(n, _)| *n == v.name) {
                seen.push((v.name, now));
            }
        }
        if seen.len() == views.len() {
            return seen;
        }
        assert!(
            now < deadline,
            "not every view showed {leader} in time:\n{}",
            dump(&views)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `status --json` and the `status` table started together now (with status's default
/// timeout: a shorter one is spent on the frozen member alone, see `MOVE_WITHIN`): what
/// each showed and how long it took.
fn status_now(cell: &Cell, source: &[String]) -> Vec<(View, Duration)> {
    let src: Vec<&str> = source.iter().map(String::as_str).collect();
    let (home, e) = (cell.home(), cell.election.as_str());
    let timed = |f: fn(&std::path::Path, &[&str], &str, &str) -> View| {
        let t = Instant::now();
        let v = f(home, &src, e, "5s");
        (v, t.elapsed())
    };
    std::thread::scope(|s| {
        let json = s.spawn(|| timed(status_json_view));
        let table = s.spawn(|| timed(status_table_view));
        let joined = |h: std::thread::ScopedJoinHandle<'_, (View, Duration)>| {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        };
        vec![joined(json), joined(table)]
    })
}

/// The causes the change may be told with, the leader having resigned while the readers
/// moved: etcd replays the history after the move, where a lease's end cannot be told
/// apart (`lease_ended`); ZooKeeper keeps no history, so a node found gone on the new
/// member was not seen going (`unknown`).
fn allowed_causes(kind: Kind) -> Vec<&'static str> {
    let moved = if is_etcd(kind) {
        "lease_ended"
    } else {
        "unknown"
    };
    [crate::scenarios::resign_expect(kind).1, &[moved]].concat()
}

/// (8) The member serve and watch read through frozen, then the leader resigns at once
/// through the live members: every view shows its successor within 2 s (+ slack), a
/// `status` started after it too, they agree, and the source reads fresh, all while the
/// member is still frozen.
///
/// The frozen member is a follower of the quorum: freezing the raft or ZooKeeper leader
/// makes the members elect another first (and etcd renew every lease), which is another
/// scenario than the read path's.
pub fn member_frozen(kind: Kind) {
    // Two cells freezing members of one cluster at once would thaw each other's.
    let lock = match is_etcd(kind) {
        true => &ETCD_FROZEN,
        false => &ZK_FROZEN,
    };
    let _one_at_a_time = lock.lock().unwrap_or_else(|e| e.into_inner());
    let eps = endpoints(kind);
    let mut cell = Cell::in_cluster(kind, "frozen", 8, &eps.join(","));
    let mut obs = Observers::start(&cell, &cell.source, true);
    let f = observed_member(kind, &cell, &mut obs, &eps);
    let live: Vec<String> = (0..eps.len())
        .filter(|&i| i != f)
        .map(|i| eps[i].clone())
        .collect();
    cell.participants_via(&live.join(","));
    let (mut a, mut b, ia, ib) = two_nodes(&cell, &mut obs);
    let before = obs.watch.seen.len();
    freeze(kind, &eps[f], true);
    let thaw = Thaw(kind, eps[f].clone());
    let sent = Instant::now();
    let status = a.resign(Duration::from_secs(3));
    assert!(status.success(), "{kind:?}: SIGTERM exits 0: {}", a.dump());
    let seen = first_shown(&mut obs, &ib, sent + MOVE_WITHIN + SLACK);
    let changed = b.wait_leader(T);
    let mut shown: Vec<String> = seen
        .iter()
        .map(|(name, at)| format!("{name} {:?}", at.saturating_duration_since(changed)))
        .collect();
    shown.extend(status_after(&cell, &obs, &ib));
    println!(
        "{kind:?}: {} frozen; node-b led {:?} after the SIGTERM; shown after that by: {}",
        eps[f],
        changed.saturating_duration_since(sent),
        shown.join(", ")
    );
    obs.status_timeout = "5s";
    // A resign is etcd's delete then revoke: each process names it by its own asking (L7).
    let how = crate::scenarios::departure_agreement(kind);
    let views = crate::scenarios::settle_as(&mut obs, &cell, Some(&ib), how);
    let ended = allowed_causes(kind);
    let what = format!("node-a ends (one of {ended:?}), node-b leads");
    each_list(kind, &views, &what, |after| {
        let cause = after[0].cause.as_deref();
        (handover(&ia, &ib, after) || gap(&ia, &ib, after))
            && cause.is_some_and(|c| ended.contains(&c))
    });
    let source: Vec<String> = obs.watch.seen[before..]
        .iter()
        .filter(|v| v.get("election").is_none())
        .map(|v| format!("{} {}", v["kind"], v["detail"]))
        .collect();
    println!(
        "{kind:?}: changes {:?}; watch said of the source meanwhile: {source:?}",
        &changes(&views)[1..]
    );
    fresh(&cell, &obs.source, &[]);
    drop(thaw);
}

/// `status --json` and the table, started after the change (three rounds: a ZooKeeper
/// status dials a member picked by its process id), each showing `leader` within 2 s
/// (+ slack); how long each took.
fn status_after(cell: &Cell, obs: &Observers, leader: &str) -> Vec<String> {
    let mut took_each = Vec::new();
    for round in 0..3 {
        for (v, took) in status_now(cell, &obs.source) {
            let right = v.leader.as_deref().is_some_and(|l| names(l, leader));
            assert!(
                right && took <= MOVE_WITHIN + SLACK,
                "{:?}: {} started after the change showed {:?} after {took:?}",
                cell.kind,
                v.name,
                v.leader
            );
            took_each.push(format!("{} (run {round}) {took:?}", v.name));
        }
    }
    took_each
}
